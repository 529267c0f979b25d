package org.doracache.hadoop;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * XXH3-64 with seed 0 and the default secret: the checksum of the page file format (the worker
 * writes it with the Python {@code xxhash} package; {@code tests/worker/spark/test_jvm.py} checks
 * every length class against it). The JDK has no XXH3 and pyspark's jars carry none, hence
 * this one.
 */
final class Xxh3 {
    private static final long PRIME32_1 = 0x9E3779B1L;
    private static final long PRIME32_2 = 0x85EBCA77L;
    private static final long PRIME32_3 = 0xC2B2AE3DL;
    private static final long PRIME64_1 = 0x9E3779B185EBCA87L;
    private static final long PRIME64_2 = 0xC2B2AE3D27D4EB4FL;
    private static final long PRIME64_3 = 0x165667B19E3779F9L;
    private static final long PRIME64_4 = 0x85EBCA77C2B2AE63L;
    private static final long PRIME64_5 = 0x27D4EB2F165667C5L;
    private static final long PRIME_MX1 = 0x165667919E3779F9L;
    private static final long PRIME_MX2 = 0x9FB21C651E98DF25L;

    // Little-endian reads at any offset, which the JIT compiles to plain loads.
    private static final VarHandle LONGS =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INTS =
        MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private static final int STRIPE = 64;
    private static final int SECRET_SIZE = 192;
    private static final int STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE) / 8;
    private static final int BLOCK = STRIPE * STRIPES_PER_BLOCK;

    /** The reference implementation's default secret (its {@code XXH3_kSecret}). */
    private static final byte[] SECRET = bytes(
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
        0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
        0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
        0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
        0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
        0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
        0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
        0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
        0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
        0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
        0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
        0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e);

    /** The secret read as little-endian longs at every byte offset the long path uses. */
    private static final long[] SECRET_AT = new long[SECRET_SIZE - 7];

    static {
        for (int i = 0; i < SECRET_AT.length; i++) {
            SECRET_AT[i] = le64(SECRET, i);
        }
    }

    private Xxh3() {}

    private static byte[] bytes(int... values) {
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (byte) values[i];
        }
        return out;
    }

    static long hash(byte[] in, int off, int len) {
        if (len <= 16) {
            return upTo16(in, off, len);
        }
        if (len <= 128) {
            return upTo128(in, off, len);
        }
        if (len <= 240) {
            return upTo240(in, off, len);
        }
        return longInput(in, off, len);
    }

    private static long le64(byte[] b, int i) {
        return (long) LONGS.get(b, i);
    }

    private static long le32(byte[] b, int i) {
        return (int) INTS.get(b, i) & 0xFFFFFFFFL;
    }

    /** The low and high halves of the 128-bit product, xor-ed. */
    private static long fold(long a, long b) {
        long high = Math.multiplyHigh(a, b) + ((a >> 63) & b) + ((b >> 63) & a);
        return (a * b) ^ high;
    }

    private static long avalanche(long h) {
        h ^= h >>> 37;
        h *= PRIME_MX1;
        return h ^ (h >>> 32);
    }

    private static long avalanche64(long h) {
        h ^= h >>> 33;
        h *= PRIME64_2;
        h ^= h >>> 29;
        h *= PRIME64_3;
        return h ^ (h >>> 32);
    }

    private static long rrmxmx(long h, int len) {
        h ^= Long.rotateLeft(h, 49) ^ Long.rotateLeft(h, 24);
        h *= PRIME_MX2;
        h ^= (h >>> 35) + len;
        h *= PRIME_MX2;
        return h ^ (h >>> 28);
    }

    private static long upTo16(byte[] in, int off, int len) {
        if (len > 8) {
            long low = le64(in, off) ^ (SECRET_AT[24] ^ SECRET_AT[32]);
            long high = le64(in, off + len - 8) ^ (SECRET_AT[40] ^ SECRET_AT[48]);
            return avalanche(len + Long.reverseBytes(low) + high + fold(low, high));
        }
        if (len >= 4) {
            long first = le32(in, off);
            long last = le32(in, off + len - 4);
            return rrmxmx((last + (first << 32)) ^ (SECRET_AT[8] ^ SECRET_AT[16]), len);
        }
        if (len > 0) {
            long combined = (in[off] & 0xFFL) << 16 | (in[off + (len >> 1)] & 0xFFL) << 24
                | (in[off + len - 1] & 0xFFL) | (long) len << 8;
            return avalanche64(combined ^ (le32(SECRET, 0) ^ le32(SECRET, 4)));
        }
        return avalanche64(SECRET_AT[56] ^ SECRET_AT[64]);
    }

    private static long mix16(byte[] in, int at, int secret) {
        return fold(le64(in, at) ^ SECRET_AT[secret], le64(in, at + 8) ^ SECRET_AT[secret + 8]);
    }

    private static long upTo128(byte[] in, int off, int len) {
        long acc = len * PRIME64_1;
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    acc += mix16(in, off + 48, 96);
                    acc += mix16(in, off + len - 64, 112);
                }
                acc += mix16(in, off + 32, 64);
                acc += mix16(in, off + len - 48, 80);
            }
            acc += mix16(in, off + 16, 32);
            acc += mix16(in, off + len - 32, 48);
        }
        acc += mix16(in, off, 0);
        acc += mix16(in, off + len - 16, 16);
        return avalanche(acc);
    }

    private static long upTo240(byte[] in, int off, int len) {
        long acc = len * PRIME64_1;
        for (int i = 0; i < 8; i++) {
            acc += mix16(in, off + 16 * i, 16 * i);
        }
        acc = avalanche(acc);
        long end = mix16(in, off + len - 16, 136 - 17);
        for (int i = 8; i < len / 16; i++) {
            end += mix16(in, off + 16 * i, 16 * (i - 8) + 3);
        }
        return avalanche(acc + end);
    }

    private static long longInput(byte[] in, int off, int len) {
        long[] acc = {PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5,
            PRIME32_1};
        int blocks = (len - 1) / BLOCK;
        for (int n = 0; n < blocks; n++) {
            stripes(acc, in, off + n * BLOCK, STRIPES_PER_BLOCK);
            scramble(acc);
        }
        int tail = off + blocks * BLOCK;
        stripes(acc, in, tail, (len - 1 - blocks * BLOCK) / STRIPE);
        stripe(acc, in, off + len - STRIPE, SECRET_SIZE - STRIPE - 7);
        long result = len * PRIME64_1;
        for (int i = 0; i < 4; i++) {
            result += fold(acc[2 * i] ^ SECRET_AT[11 + 16 * i], acc[2 * i + 1] ^ SECRET_AT[19 + 16 * i]);
        }
        return avalanche(result);
    }

    private static void stripes(long[] acc, byte[] in, int at, int count) {
        for (int n = 0; n < count; n++) {
            stripe(acc, in, at + n * STRIPE, n * 8);
        }
    }

    private static void stripe(long[] acc, byte[] in, int at, int secret) {
        for (int i = 0; i < 8; i++) {
            long value = le64(in, at + 8 * i);
            long key = value ^ SECRET_AT[secret + 8 * i];
            acc[i ^ 1] += value;
            acc[i] += (key & 0xFFFFFFFFL) * (key >>> 32);
        }
    }

    private static void scramble(long[] acc) {
        for (int i = 0; i < 8; i++) {
            long a = acc[i];
            a ^= a >>> 47;
            a ^= SECRET_AT[SECRET_SIZE - STRIPE + 8 * i];
            acc[i] = a * PRIME32_1;
        }
    }
}
