"""Log lines as JSON objects: the standard fields, a record's extra fields, the traceback."""

import json
import logging
import sys

import pytest

from worker.logs import JsonFormatter, configure


def record(**extra: object) -> logging.LogRecord:
    made = logging.LogRecord("worker.x", logging.WARNING, __file__, 1, "a %s", ("b",), None)
    made.__dict__.update(extra)
    return made


def test_a_record_is_one_json_object() -> None:
    line = JsonFormatter().format(record(status=404))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["level"] == "WARNING"
    assert parsed["logger"] == "worker.x"
    assert parsed["message"] == "a b"
    assert parsed["status"] == 404
    assert parsed["time"].endswith("+00:00")


def test_an_exception_is_in_the_object() -> None:
    try:
        raise KeyError("boom")
    except KeyError:
        made = logging.LogRecord("w", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    parsed = json.loads(JsonFormatter().format(made))
    assert "KeyError: 'boom'" in parsed["exception"]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="'xml'"):
        configure("xml")
