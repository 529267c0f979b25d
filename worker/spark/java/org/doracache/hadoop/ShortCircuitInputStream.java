package org.doracache.hadoop;

import java.io.EOFException;
import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A file read from the worker's page files where they are cached, pinned to the version the
 * first location answer named, and over WebHDFS ({@code OPEN} with that version) where they are
 * not, or cannot be read right. The Java twin of {@code worker/client/shortcircuit.py}.
 *
 * <p>Reads are served from one buffer of verified bytes, filled a run of whole 16 KiB blocks of
 * one page at a time (at least {@link #MIN_FILL}, so a reader making small reads does not hash
 * the same block again), or by one HTTP read of the run of pages that are not cached. Locations
 * are asked for per window of {@link #WINDOW_BYTES}; a page read over HTTP is located again when
 * it is needed again (the worker has cached it by then). Not thread-safe beyond the
 * synchronization {@link FSInputStream} expects of positioned reads.
 */
final class ShortCircuitInputStream extends FSInputStream {
    static final long WINDOW_BYTES = 256L << 20;
    private static final int MIN_FILL = 128 << 10;
    private static final int MAX_HTTP = 16 << 20;

    private final DoraWebHdfsFileSystem fs;
    private final FileSystem.Statistics statistics;
    private final Path path;
    private final String version;
    private final long length;
    private final int pageSize;
    private final long windowPages;
    private final Map<Long, Located> windows = new HashMap<>();
    private final Set<Long> fetched = new HashSet<>();

    private PageFile file;
    private long fileIndex = -1;
    private byte[] buffer = new byte[0];
    private long bufferStart;
    private int bufferLength;
    private long pos;
    private boolean closed;

    ShortCircuitInputStream(DoraWebHdfsFileSystem fs, FileSystem.Statistics statistics, Path path,
        Located first) {
        this.fs = fs;
        this.statistics = statistics;
        this.path = path;
        this.version = first.version;
        this.length = first.length;
        this.pageSize = first.pageSize;
        this.windowPages = Math.max(1, WINDOW_BYTES / pageSize);
        windows.put(0L, first);
    }

    @Override
    public synchronized int read(byte[] into, int off, int len) throws IOException {
        if (closed) {
            throw new IOException("Stream is closed: " + path);
        }
        if (off < 0 || len < 0 || len > into.length - off) {
            throw new IndexOutOfBoundsException();
        }
        if (len == 0) {
            return 0;
        }
        if (pos >= length) {
            return -1;
        }
        if (pos < bufferStart || pos >= bufferStart + bufferLength) {
            fill((int) Math.min(len, length - pos));
        }
        int at = (int) (pos - bufferStart);
        int count = Math.min(len, bufferLength - at);
        System.arraycopy(buffer, at, into, off, count);
        pos += count;
        if (statistics != null) {
            statistics.incrementBytesRead(count);
        }
        return count;
    }

    @Override
    public synchronized int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public synchronized void seek(long target) throws IOException {
        if (closed) {
            throw new IOException("Stream is closed: " + path);
        }
        if (target < 0) {
            throw new EOFException("Cannot seek to a negative offset: " + target);
        }
        if (target > length) {
            throw new EOFException("Cannot seek past the end of " + path + ": " + target);
        }
        pos = target;
    }

    @Override
    public synchronized long getPos() {
        return pos;
    }

    @Override
    public boolean seekToNewSource(long target) {
        return false;
    }

    @Override
    public synchronized int available() throws IOException {
        if (closed) {
            throw new IOException("Stream is closed: " + path);
        }
        return (int) Math.min(Integer.MAX_VALUE, length - pos);
    }

    @Override
    public synchronized void close() {
        closed = true;
        closeFile();
        buffer = new byte[0];
        bufferLength = 0;
    }

    /** Fill the buffer from {@link #pos} with at least one byte, aiming at {@code want}. */
    private void fill(int want) throws IOException {
        long index = pos / pageSize;
        Located.Page page = fs.shortCircuit() ? cachedPage(index) : null;
        if (page != null) {
            try {
                fillFromPage(index, page, want);
                return;
            } catch (PageFile.Miss miss) {
                closeFile();
                windows.remove(index / windowPages);
                fs.missed(miss);
            }
        }
        fillOverHttp(index, want);
    }

    /** The page's location when the worker said it is cached (locating its window first when
     * needed), or null. */
    private Located.Page cachedPage(long index) throws IOException {
        long window = index / windowPages;
        Located located = windows.get(window);
        if (located == null || fetched.contains(index)) {
            long first = window * windowPages;
            long offset = first * pageSize;
            located = fs.locate(path, version, offset, Math.min(windowPages * pageSize, length - offset));
            if (located == null) {
                throw new IOException(path + " is no longer a file");
            }
            windows.put(window, located);
            for (long i = first; i < first + windowPages; i++) {
                fetched.remove(i);
            }
        }
        return located.pages.get(index);
    }

    private void fillFromPage(long index, Located.Page page, int want) throws PageFile.Miss {
        if (fileIndex != index) {
            closeFile();
            file = new PageFile(page.path, page.offset, page.name, pageSize, page.size);
            fileIndex = index;
        }
        int within = (int) (pos - index * pageSize);
        int start = within - within % PageFile.BLOCK_SIZE;
        long wanted = (long) within + Math.max(want, MIN_FILL);
        long rounded = (wanted + PageFile.BLOCK_SIZE - 1) / PageFile.BLOCK_SIZE * PageFile.BLOCK_SIZE;
        int end = (int) Math.min(file.length(), rounded);
        if (within >= end) {
            throw new PageFile.Miss(page.path, "holds " + file.length() + " bytes, not byte " + within);
        }
        reserve(end - start);
        file.readBlocks(start, end, buffer, 0);
        bufferStart = index * pageSize + start;
        bufferLength = end - start;
        DoraWebHdfsFileSystem.SHORT_CIRCUIT_BYTES.addAndGet(end - within);
    }

    /** Read over WebHDFS from {@link #pos} to the end of the run of pages not known to be
     * cached that {@code want} reaches into (at least to the end of this page). */
    private void fillOverHttp(long index, int want) throws IOException {
        long last = index;
        long wantedEnd = Math.min(length, pos + Math.min(want, MAX_HTTP));
        while ((last + 1) * pageSize < wantedEnd && notCached(last + 1)) {
            last++;
        }
        long end = Math.min(length, Math.min((last + 1) * pageSize, pos + MAX_HTTP));
        int size = (int) (end - pos);
        reserve(size);
        fs.readOver(path, version, pos, buffer, size);
        for (long i = index; i <= last; i++) {
            fetched.add(i);
        }
        bufferStart = pos;
        bufferLength = size;
        DoraWebHdfsFileSystem.HTTP_BYTES.addAndGet(size);
    }

    /** Whether a located window lists the page as missing (an unlocated one is located before
     * it is read, so it ends a run). */
    private boolean notCached(long index) {
        Located located = windows.get(index / windowPages);
        return located != null && located.missing.contains(index);
    }

    private void reserve(int size) {
        if (buffer.length < size) {
            buffer = new byte[Math.max(size, Math.min(2 * buffer.length, MAX_HTTP))];
        }
        bufferLength = 0;
    }

    private void closeFile() {
        if (file != null) {
            file.close();
            file = null;
            fileIndex = -1;
        }
    }
}
