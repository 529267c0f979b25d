package org.doracache.hadoop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code PageLocations} of the worker's {@code GETPAGELOCATIONS} answer for a window of one
 * file version: where its cached pages are (a page neither listed nor missing lies outside the
 * window).
 */
final class Located {
    /**
     * A cached page: the file it is in as the worker names it (its page file, or a pack of small
     * pages), where the page starts in it, its data bytes, and the page's name, which its header
     * must carry.
     */
    static final class Page {
        final String path;
        final long offset;
        final int size;
        final String name;

        Page(String path, long offset, int size, String name) {
            this.path = path;
            this.offset = offset;
            this.size = size;
            this.name = name;
        }
    }

    final String version;
    final long length;
    final int pageSize;
    final Map<Long, Page> pages = new HashMap<>();
    final Set<Long> missing = new HashSet<>();

    /**
     * The answer's {@code PageLocations}, or null when it has none (the path is a directory).
     * Throws {@link Unknown} for a page file format this reader does not know, IOException for a
     * malformed answer.
     */
    static Located of(Map<?, ?> answer) throws IOException {
        Object body = answer.get("PageLocations");
        if (body == null) {
            return null;
        }
        if (!(body instanceof Map)) {
            throw new IOException("malformed GETPAGELOCATIONS answer: " + answer);
        }
        return new Located((Map<?, ?>) body);
    }

    private Located(Map<?, ?> body) throws IOException {
        try {
            version = (String) body.get("version");
            length = ((Number) body.get("length")).longValue();
            pageSize = ((Number) body.get("page_size")).intValue();
            if (((Number) body.get("format")).intValue() != PageFile.FORMAT
                || ((Number) body.get("block_size")).intValue() != PageFile.BLOCK_SIZE
                || ((Number) body.get("header_size")).intValue() != PageFile.headerSize(pageSize)) {
                throw new Unknown("the worker's page files are of a format this reader does not know");
            }
            String prefix = (String) body.get("file_id") + "." + versionKey(version) + ".";
            for (Object item : (List<?>) body.get("pages")) {
                List<?> page = (List<?>) item;
                long index = ((Number) page.get(0)).longValue();
                // The offset is absent from workers that wrote page files only.
                long offset = page.size() > 3 ? ((Number) page.get(3)).longValue() : 0;
                pages.put(index, new Page((String) page.get(1), offset,
                    ((Number) page.get(2)).intValue(), prefix + index));
            }
            for (Object index : (List<?>) body.get("missing")) {
                missing.add(((Number) index).longValue());
            }
        } catch (ClassCastException | NullPointerException | IndexOutOfBoundsException e) {
            throw new IOException("malformed GETPAGELOCATIONS answer: " + e);
        }
        if (version == null || pageSize <= 0 || length < 0) {
            throw new IOException("malformed GETPAGELOCATIONS answer: " + body);
        }
    }

    /**
     * The stand-in for a version in page names ({@code pagestore.page.version_key}): the first
     * 32 hex digits of the SHA-256 of its UTF-8 bytes.
     */
    static String versionKey(String version) {
        byte[] digest;
        try {
            digest = MessageDigest.getInstance("SHA-256").digest(version.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
        StringBuilder key = new StringBuilder(32);
        for (int i = 0; i < 16; i++) {
            key.append(String.format("%02x", digest[i] & 0xff));
        }
        return key.toString();
    }

    /** The worker cannot give locations this reader can use: read through WebHDFS instead. */
    static final class Unknown extends IOException {
        private static final long serialVersionUID = 1L;

        Unknown(String why) {
            super(why);
        }
    }
}
