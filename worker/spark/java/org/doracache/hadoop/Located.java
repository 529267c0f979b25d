package org.doracache.hadoop;

import java.io.IOException;
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
    /** A cached page: its page file as the worker names it, and its data bytes. */
    static final class Page {
        final String path;
        final int size;

        Page(String path, int size) {
            this.path = path;
            this.size = size;
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
            for (Object item : (List<?>) body.get("pages")) {
                List<?> page = (List<?>) item;
                pages.put(((Number) page.get(0)).longValue(),
                    new Page((String) page.get(1), ((Number) page.get(2)).intValue()));
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

    /** The worker cannot give locations this reader can use: read through WebHDFS instead. */
    static final class Unknown extends IOException {
        private static final long serialVersionUID = 1L;

        Unknown(String why) {
            super(why);
        }
    }
}
