package org.doracache.hadoop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * One open page of format 3 ({@code pagestore/pagefile.py} has the layout), in its own page
 * file or at an offset in a pack of small pages ({@code pagestore/pack.py}), its header checked: the magic, the checksum algorithm, the block layout, the header's own checksum, and
 * that it holds the page asked for (the hash of its file name and its data length). Reads verify
 * every 16 KiB block they touch, so a page file evicted, replaced, torn or corrupt yields a
 * {@link Miss}, never wrong bytes. Not thread-safe.
 */
final class PageFile implements AutoCloseable {
    static final int FORMAT = 3;
    static final int BLOCK_SIZE = 16 << 10;
    private static final int MAGIC = 0x33475044; // "DPG3", little-endian
    private static final int XXH3_64 = 2;
    private static final int FIXED = 32;

    /** A page that cannot be read right from its file: read it through the worker instead. */
    static final class Miss extends IOException {
        private static final long serialVersionUID = 1L;

        /** This process may not open the worker's page files at all (another user). */
        final boolean denied;

        Miss(String path, String why) {
            this(path, why, false);
        }

        Miss(String path, String why, boolean denied) {
            super(path + ": " + why);
            this.denied = denied;
        }
    }

    final String path;
    private final long offset;
    private final int headerSize;
    private final int length;
    private final long[] checksums;
    private FileChannel channel;

    /** Checksums in the header's table of a page file of this page size. */
    static int entries(int pageSize) {
        return (pageSize + BLOCK_SIZE - 1) / BLOCK_SIZE;
    }

    /** Bytes before the data in every page file of this page size. */
    static int headerSize(int pageSize) {
        return FIXED + 8 * (entries(pageSize) + 1);
    }

    PageFile(String path, long offset, String name, int pageSize, int length) throws Miss {
        this.path = path;
        this.offset = offset;
        this.length = length;
        int entries = entries(pageSize);
        this.headerSize = headerSize(pageSize);
        Path file = Paths.get(path);
        try {
            // Java opens with no O_NONBLOCK: a FIFO put in a page file's place would block the
            // open until a writer comes. Checked first; only the worker's user may write a page
            // directory (0750), so no one else can swap one in between.
            if (!Files.readAttributes(file, BasicFileAttributes.class).isRegularFile()) {
                throw new Miss(path, "not a regular file");
            }
            channel = FileChannel.open(file, StandardOpenOption.READ);
        } catch (Miss e) {
            throw e;
        } catch (AccessDeniedException | SecurityException e) {
            throw new Miss(path, "may not open it: " + e, true);
        } catch (IOException e) {
            throw new Miss(path, "cannot open: " + e);
        }
        try {
            checksums = readHeader(name, entries);
        } catch (Miss e) {
            close();
            throw e;
        }
    }

    private long[] readHeader(String name, int entries) throws Miss {
        byte[] raw = new byte[headerSize];
        readFully(raw, 0, headerSize, offset);
        ByteBuffer header = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        if (header.getInt(0) != MAGIC || raw[4] != XXH3_64) {
            throw new Miss(path, "not a page file of format " + FORMAT);
        }
        if (header.getInt(8) != BLOCK_SIZE || header.getInt(12) != entries) {
            throw new Miss(path, "written for another layout");
        }
        if (Xxh3.hash(raw, 0, headerSize - 8) != header.getLong(headerSize - 8)) {
            throw new Miss(path, "header checksum mismatch");
        }
        byte[] encoded = name.getBytes(StandardCharsets.UTF_8);
        if (header.getLong(16) != length || header.getLong(24) != Xxh3.hash(encoded, 0, encoded.length)) {
            throw new Miss(path, "holds another page, not " + name);
        }
        long[] sums = new long[entries];
        for (int i = 0; i < entries; i++) {
            sums[i] = header.getLong(FIXED + 8 * i);
        }
        return sums;
    }

    /** The data length of this page. */
    int length() {
        return length;
    }

    /**
     * Read the whole blocks from block-aligned {@code start} up to {@code end} (a block boundary
     * or the data's end) into {@code into} at {@code at}, each verified.
     */
    void readBlocks(int start, int end, byte[] into, int at) throws Miss {
        if (start % BLOCK_SIZE != 0 || end > length || (end % BLOCK_SIZE != 0 && end != length)) {
            throw new IllegalArgumentException("not a span of whole blocks: " + start + "-" + end);
        }
        readFully(into, at, end - start, offset + headerSize + start);
        for (int block = start; block < end; block += BLOCK_SIZE) {
            int size = Math.min(BLOCK_SIZE, end - block);
            if (Xxh3.hash(into, at + block - start, size) != checksums[block / BLOCK_SIZE]) {
                throw new Miss(path, "checksum mismatch in block " + block / BLOCK_SIZE);
            }
        }
    }

    private void readFully(byte[] into, int at, int size, long position) throws Miss {
        ByteBuffer target = ByteBuffer.wrap(into, at, size);
        try {
            while (target.hasRemaining()) {
                int got = channel.read(target, position + target.position() - at);
                if (got < 0) {
                    throw new Miss(path, "ends early (truncated or torn)");
                }
            }
        } catch (Miss e) {
            throw e;
        } catch (IOException e) {
            throw new Miss(path, "read failed: " + e);
        }
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // Closing a read-only descriptor loses nothing; there is no one to tell.
        }
    }
}
