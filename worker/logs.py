"""How a worker process writes its log: one line per record, as text or as JSON objects (one per
line, for log shippers). Fields a record carries in ``extra`` (the access log's method, path,
status, ...) become keys of the JSON object."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from config.keys import KeyType, PropertyKey

LOG_FORMAT: PropertyKey[str] = PropertyKey(
    "dora.worker.log.format",
    KeyType.STRING,
    "text",
    "How the worker writes log lines: text, or json (one object per line).",
    choices=("text", "json"),
)
FORMATS = LOG_FORMAT.choices
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has: anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message``, the record's ``extra`` fields, and ``exception`` (the formatted traceback)
    when there is one. Stateless, so safe from any thread."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(log_format: str, level: int = logging.INFO) -> None:
    """Send the root logger's records to stderr in ``log_format`` (one of :data:`FORMATS`),
    replacing whatever handlers it had. Raises ValueError for another format."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r}: expected one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler()
    json_lines = log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
