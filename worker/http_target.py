"""uvicorn's httptools protocol, accepting request targets with raw UTF-8 bytes.

Hadoop's WebHDFS client builds its URLs with ``java.net.URI``, which percent-encodes spaces but
leaves non-ASCII characters as they are, so ``hadoop fs -ls /s3/lake/städte`` arrives with the
path's UTF-8 bytes in the request line, which an HDFS NameNode accepts. llhttp refuses any byte
above 0x7f in a URL ("Invalid char in url path") and has no leniency for it, so the bytes are
percent-encoded before the parser sees them: the app then gets the same decoded path as for a
client that encoded them itself (uvicorn unquotes the path as UTF-8).

Only the request line is touched, never headers or a body: the line starts a connection's
data and follows each complete message, which the parser's callbacks tell. A second request
pipelined in the same read as the end of the first is parsed as it came (pipelining clients do
not send raw UTF-8).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def quote_high_bytes(data: bytes) -> bytes:
    """``data`` with every byte above 0x7f written as ``%XX`` (the rest unchanged)."""
    if data.isascii():
        return data
    return b"".join(b"%%%02X" % byte if byte > 0x7F else bytes((byte,)) for byte in data)


class Utf8TargetProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that percent-encodes raw non-ASCII bytes of request lines.

    One instance per connection, driven by its event loop only (not thread-safe, like its
    base)."""

    # Whether the next byte received starts, or continues, a request line.
    _in_line = True
    # Whether the data fed last ended a message with no next one begun after it.
    _at_boundary = False

    def data_received(self, data: bytes) -> None:
        if self._in_line:
            end = data.find(b"\n")
            line, rest = (data, b"") if end < 0 else (data[:end], data[end:])
            self._in_line = end < 0
            data = quote_high_bytes(line) + rest
        self._at_boundary = False
        super().data_received(data)
        if self._at_boundary:
            self._in_line = True

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._at_boundary = False

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._at_boundary = True
