package org.doracache.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.web.WebHdfsFileSystem;
import org.apache.hadoop.util.JsonSerialization;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hadoop's {@code WebHdfsFileSystem} for a doracache worker, with short-circuit reads: a file
 * opened on the worker's host is read from the worker's page files (located with the worker's
 * {@code GETPAGELOCATIONS} op, every 16 KiB block checked against its XXH3-64), and over WebHDFS
 * only where pages are not cached; a file's status shares that call with the open that follows
 * it; and a located listing takes one call, not one per file. Everything else is the stock
 * client's.
 *
 * <p>Set {@code fs.webhdfs.impl} to this class ({@code worker.spark.webhdfs.spark_conf} does).
 * Short-circuit reads are on when the worker's host is this host, unless the Hadoop setting
 * {@code dora.user.client.short.circuit.enabled} is false. After a page file cannot be opened
 * for want of permission, this instance reads over WebHDFS only.
 */
public class DoraWebHdfsFileSystem extends WebHdfsFileSystem {
    /** The Python client's key, as a Hadoop setting. */
    public static final String SHORT_CIRCUIT = "dora.user.client.short.circuit.enabled";
    private static final Logger LOG = LoggerFactory.getLogger(DoraWebHdfsFileSystem.class);

    static final AtomicLong SHORT_CIRCUIT_BYTES = new AtomicLong();
    static final AtomicLong HTTP_BYTES = new AtomicLong();
    private static final AtomicLong LOCATES = new AtomicLong();
    private static final AtomicLong MISSES = new AtomicLong();

    /** How long a status's page locations serve an open of the same path. */
    static final long RECENT_NANOS = 1_000_000_000L;
    private static final int MAX_RECENT = 1024;

    /** A status's page locations, kept for the open of the same path that usually follows. */
    private static final class Recent {
        final Located located;
        final long at;

        Recent(Located located, long at) {
            this.located = located;
            this.at = at;
        }
    }

    private final Map<Path, Recent> recent = new ConcurrentHashMap<>();
    private volatile boolean shortCircuit;

    @Override
    public synchronized void initialize(URI uri, Configuration conf) throws IOException {
        super.initialize(uri, conf);
        shortCircuit = conf.getBoolean(SHORT_CIRCUIT, true) && onThisHost(uri.getHost());
    }

    private static boolean onThisHost(String host) {
        try {
            InetAddress address = InetAddress.getByName(host);
            return address.isLoopbackAddress() || address.isAnyLocalAddress()
                || NetworkInterface.getByInetAddress(address) != null;
        } catch (IOException e) {
            return false;
        }
    }

    /** Bytes read by short circuit and over HTTP, location calls and page misses, since this JVM
     * started, in all instances: what a test or a Spark driver checks. */
    public static Map<String, Long> counters() {
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("short_circuit_bytes", SHORT_CIRCUIT_BYTES.get());
        counts.put("http_bytes", HTTP_BYTES.get());
        counts.put("locates", LOCATES.get());
        counts.put("misses", MISSES.get());
        return counts;
    }

    boolean shortCircuit() {
        return shortCircuit;
    }

    /**
     * The status, with one {@code GETPAGELOCATIONS} call that also locates a file's cached pages
     * for an open of it that follows within {@link #RECENT_NANOS} (Spark's Parquet reader asks
     * for a file's status, then opens it): that open reads the version this status named, so
     * the length the caller has and the bytes it reads agree.
     */
    @Override
    public FileStatus getFileStatus(Path file) throws IOException {
        if (!shortCircuit) {
            return super.getFileStatus(file);
        }
        Path path = makeQualified(file);
        FileStatus status;
        Located located;
        try {
            Map<?, ?> answer = locateAnswer(path, null, 0, ShortCircuitInputStream.WINDOW_BYTES);
            status = fileStatus(answer, path);
            located = Located.of(answer);
        } catch (FileNotFoundException e) {
            throw e;
        } catch (Located.Unknown e) {
            LOG.warn("Short-circuit reads from {} are off: {}", getUri(), e.getMessage());
            shortCircuit = false;
            return super.getFileStatus(file);
        } catch (IOException e) {
            // Refused (outside the roots, no token) or a worker without the op: the stock call
            // answers with the exception Hadoop maps.
            return super.getFileStatus(file);
        }
        if (located != null) {
            if (recent.size() >= MAX_RECENT) {
                recent.clear();
            }
            recent.put(path, new Recent(located, System.nanoTime()));
        }
        return status;
    }

    private static FileStatus fileStatus(Map<?, ?> answer, Path path) throws IOException {
        try {
            Map<?, ?> fields = (Map<?, ?>) answer.get("FileStatus");
            return new FileStatus(number(fields, "length"), "DIRECTORY".equals(fields.get("type")),
                (int) number(fields, "replication"), number(fields, "blockSize"),
                number(fields, "modificationTime"), number(fields, "accessTime"),
                new FsPermission(Short.parseShort((String) fields.get("permission"), 8)),
                (String) fields.get("owner"), (String) fields.get("group"), path);
        } catch (ClassCastException | NullPointerException | NumberFormatException e) {
            throw new IOException("malformed FileStatus in GETPAGELOCATIONS answer: " + e);
        }
    }

    private static long number(Map<?, ?> fields, String name) {
        return ((Number) fields.get(name)).longValue();
    }

    @Override
    public FSDataInputStream open(Path file, int bufferSize) throws IOException {
        if (shortCircuit) {
            Path path = makeQualified(file);
            try {
                Recent kept = recent.remove(path);
                Located first = kept != null && System.nanoTime() - kept.at < RECENT_NANOS
                    ? kept.located
                    : locate(path, null, 0, ShortCircuitInputStream.WINDOW_BYTES);
                if (first == null) {
                    throw new IOException(path + " is a directory");
                }
                return new FSDataInputStream(
                    new ShortCircuitInputStream(this, statistics, path, first));
            } catch (FileNotFoundException e) {
                throw e;
            } catch (Located.Unknown e) {
                LOG.warn("Short-circuit reads from {} are off: {}", getUri(), e.getMessage());
                shortCircuit = false;
            } catch (IOException e) {
                // Whatever it was (a directory, a worker without the op), the stock client
                // answers it as it always does.
                LOG.debug("Locating {} failed; reading it over WebHDFS: {}", path, e.toString());
            }
        }
        return super.open(file, bufferSize);
    }

    /** Where the cached pages of {@code [offset, offset + length)} of the file are, at
     * {@code version} (null: the current one, as the path's sync interval finds it). */
    Located locate(Path path, String version, long offset, long length) throws IOException {
        return Located.of(locateAnswer(path, version, offset, length));
    }

    private Map<?, ?> locateAnswer(Path path, String version, long offset, long length)
        throws IOException {
        LOCATES.incrementAndGet();
        StringBuilder query = new StringBuilder("op=GETPAGELOCATIONS&offset=").append(offset)
            .append("&length=").append(length);
        if (version != null) {
            query.append("&version=").append(URLEncoder.encode(version, StandardCharsets.UTF_8));
        }
        return getJson(path, query.toString());
    }

    /**
     * The stock listing, its files as {@link LocatedFileStatus} located with one
     * {@code LISTBLOCKLOCATIONS} call (a doracache op). Spark takes the locations of a listed
     * {@code LocatedFileStatus} as they are and asks {@code getFileBlockLocations} for any other
     * file: with the stock client a query's planning waited on one call per input file.
     */
    @Override
    public FileStatus[] listStatus(Path dir) throws IOException {
        FileStatus[] statuses = super.listStatus(dir);
        if (Arrays.stream(statuses).noneMatch(FileStatus::isFile)) {
            return statuses;
        }
        Map<?, ?> byName;
        try {
            byName = (Map<?, ?>) getJson(makeQualified(dir), "op=LISTBLOCKLOCATIONS")
                .get("BlockLocationsByName");
        } catch (FileNotFoundException e) {
            throw e;
        } catch (IOException | ClassCastException e) {
            // A worker without the op: the statuses as the stock client gives them.
            LOG.debug("LISTBLOCKLOCATIONS of {} failed: {}", dir, e.toString());
            return statuses;
        }
        FileStatus[] located = new FileStatus[statuses.length];
        for (int i = 0; i < statuses.length; i++) {
            FileStatus status = statuses[i];
            Object blocks = byName == null ? null : byName.get(status.getPath().getName());
            located[i] = status.isFile() && blocks != null
                ? new LocatedFileStatus(status, blockLocations(blocks))
                : status;
        }
        return located;
    }

    /** {@link #listStatus(Path)}'s located files as they are, where the stock client asks
     * for each file's block locations again. */
    @Override
    protected RemoteIterator<LocatedFileStatus> listLocatedStatus(Path dir, PathFilter filter)
        throws IOException {
        List<LocatedFileStatus> located = new ArrayList<>();
        for (FileStatus status : listStatus(dir)) {
            if (!filter.accept(status.getPath())) {
                continue;
            }
            if (status instanceof LocatedFileStatus) {
                located.add((LocatedFileStatus) status);
            } else {
                BlockLocation[] blocks =
                    status.isFile() ? getFileBlockLocations(status, 0, status.getLen()) : null;
                located.add(new LocatedFileStatus(status, blocks));
            }
        }
        Iterator<LocatedFileStatus> items = located.iterator();
        return new RemoteIterator<LocatedFileStatus>() {
            @Override
            public boolean hasNext() {
                return items.hasNext();
            }

            @Override
            public LocatedFileStatus next() {
                return items.next();
            }
        };
    }

    /** One file's {@code BlockLocations} object, as {@code GETFILEBLOCKLOCATIONS} answers. */
    private static BlockLocation[] blockLocations(Object answer) throws IOException {
        try {
            List<?> blocks = (List<?>) ((Map<?, ?>) ((Map<?, ?>) answer).get("BlockLocations"))
                .get("BlockLocation");
            BlockLocation[] out = new BlockLocation[blocks.size()];
            for (int i = 0; i < out.length; i++) {
                Map<?, ?> block = (Map<?, ?>) blocks.get(i);
                out[i] = new BlockLocation(strings(block.get("names")), strings(block.get("hosts")),
                    strings(block.get("cachedHosts")), strings(block.get("topologyPaths")),
                    ((Number) block.get("offset")).longValue(),
                    ((Number) block.get("length")).longValue(),
                    Boolean.TRUE.equals(block.get("corrupt")));
            }
            return out;
        } catch (ClassCastException | NullPointerException e) {
            throw new IOException("malformed LISTBLOCKLOCATIONS answer: " + e);
        }
    }

    private static String[] strings(Object list) {
        return ((List<?>) list).stream().map(String::valueOf).toArray(String[]::new);
    }

    /** The JSON answer of a GET of {@code op} on {@code path}. */
    private Map<?, ?> getJson(Path path, String query) throws IOException {
        HttpURLConnection connection = connect(path, query);
        try (InputStream body = connection.getInputStream()) {
            return JsonSerialization.mapReader().readValue(body);
        } catch (IOException e) {
            throw failure(connection, path, e);
        }
    }

    /** Fill {@code into[0, size)} with the file's bytes from {@code offset}, at {@code version},
     * over WebHDFS. */
    void readOver(Path path, String version, long offset, byte[] into, int size) throws IOException {
        String query = "op=OPEN&data=true&version=" + URLEncoder.encode(version, StandardCharsets.UTF_8)
            + "&offset=" + offset + "&length=" + size;
        HttpURLConnection connection = connect(path, query);
        try (InputStream body = connection.getInputStream()) {
            int done = 0;
            while (done < size) {
                int got = body.read(into, done, size - done);
                if (got < 0) {
                    throw new IOException("the worker sent " + done + " of " + size + " bytes of " + path);
                }
                done += got;
            }
        } catch (IOException e) {
            throw failure(connection, path, e);
        }
    }

    private HttpURLConnection connect(Path path, String query) throws IOException {
        URI uri = getUri();
        int port = uri.getPort() < 0 ? getDefaultPort() : uri.getPort();
        URL url = new URL(getTransportScheme(), uri.getHost(), port,
            "/webhdfs/v1" + path.toUri().getRawPath() + "?" + query);
        HttpURLConnection connection = (HttpURLConnection) connectionFactory.openConnection(url);
        connection.setInstanceFollowRedirects(false);
        return connection;
    }

    /** The error to raise for a failed call: the worker's RemoteException message, as
     * FileNotFoundException for a 404. */
    private static IOException failure(HttpURLConnection connection, Path path, IOException cause) {
        int code;
        try {
            code = connection.getResponseCode();
        } catch (IOException e) {
            return cause;
        }
        if (code == HttpURLConnection.HTTP_OK) {
            return cause;
        }
        String message = "HTTP " + code + " for " + path;
        InputStream error = connection.getErrorStream();
        if (error != null) {
            try (InputStream body = error) {
                Map<?, ?> answer = JsonSerialization.mapReader().readValue(body);
                Object remote = answer.get("RemoteException");
                if (remote instanceof Map) {
                    message = String.valueOf(((Map<?, ?>) remote).get("message"));
                }
            } catch (IOException | RuntimeException e) {
                // Not a RemoteException: the status line says what there is to say.
            }
        }
        if (code == HttpURLConnection.HTTP_NOT_FOUND) {
            return new FileNotFoundException(message);
        }
        return new IOException(message, cause);
    }

    /** A located page could not be read right from its file. */
    void missed(PageFile.Miss miss) {
        MISSES.incrementAndGet();
        LOG.debug("Short-circuit miss, reading over WebHDFS: {}", miss.getMessage());
        if (miss.denied) {
            LOG.warn("Short-circuit reads from {} are off: {}", getUri(), miss.getMessage());
            shortCircuit = false;
        }
    }
}
