"""WebHDFS query parameters: names are case-insensitive (as the NameNode's are), values are
parsed with the NameNode's error wording, ``Invalid value for webhdfs parameter "offset"``."""

from __future__ import annotations

import re

from starlette.datastructures import QueryParams

from config.units import parse_duration
from worker.api import numbers
from worker.errors import InvalidRequest

_FSACTION = re.compile(r"^[r-][w-][x-]$")


def _invalid(name: str, text: str, expected: str) -> InvalidRequest:
    shown = numbers.shown(text)
    return InvalidRequest(f'Invalid value for webhdfs parameter "{name}": {shown} {expected}')


class Query:
    """One request's parameters. Not shared between requests."""

    def __init__(self, params: QueryParams) -> None:
        self._values = {name.lower(): value for name, value in params.multi_items()}

    def text(self, name: str) -> str | None:
        value = self._values.get(name)
        return value if value else None

    def required(self, name: str) -> str:
        value = self.text(name)
        if value is None:
            raise InvalidRequest(f'Missing webhdfs parameter "{name}"')
        return value

    def long(self, name: str, default: int) -> int:
        """A non-negative integer parameter (offsets and lengths)."""
        text = self.text(name)
        if text is None:
            return default
        try:
            return numbers.natural(text)
        except ValueError as exc:
            raise _invalid(name, text, f"is not a non-negative whole number: {exc}") from None

    def optional_long(self, name: str) -> int | None:
        """:meth:`long`, None when not given (a length: to the end)."""
        return None if self.text(name) is None else self.long(name, 0)

    def boolean(self, name: str, default: bool = False) -> bool:
        text = self.text(name)
        if text is None:
            return default
        if text.lower() not in ("true", "false"):
            raise _invalid(name, text, "is not true or false")
        return text.lower() == "true"

    def sync_interval(self) -> int | None:
        """``sync_interval`` (ms or a duration; -1 never, 0 always), None when absent."""
        text = self.text("sync_interval")
        if text is None:
            return None
        try:
            return parse_duration(text, allow_never=True)
        except ValueError as exc:
            raise _invalid("sync_interval", text, f"is not a sync interval: {exc}") from None

    def serve_stale(self) -> bool | None:
        """``serve_stale`` (true or false: serve while revalidating), None when absent."""
        text = self.text("serve_stale")
        return None if text is None else self.boolean("serve_stale")

    def fsaction(self) -> str:
        """``fsaction`` of CHECKACCESS, such as ``r-x``."""
        text = self.required("fsaction")
        if not _FSACTION.match(text):
            raise _invalid("fsaction", text, "is not an action such as r-x")
        return text
