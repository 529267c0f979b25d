"""A read's result of known size, filled in place in a new ``bytes`` object.

A read into a ``bytearray`` ends with ``bytes(buffer)``: a second allocation and a copy of the
whole result, which for a warm read from page files costs as much as the read itself (a 64 MB
read went from ~0.9 to ~1.8 GB/s without it). CPython lets the creator of a new bytes object
fill it before anyone else sees it (``PyBytes_FromStringAndSize(NULL, n)``, as its own
``FileIO.read`` does); :class:`OutBytes` does that through ``ctypes.pythonapi``. Elsewhere, and
for small results where the copy is cheap, it falls back to a ``bytearray`` and one copy.
"""

from __future__ import annotations

import ctypes
import sys

IN_PLACE_MIN = 1 << 20
"""Results smaller than this are copied once: the copy costs less than building the view."""

_api = ctypes.pythonapi if sys.implementation.name == "cpython" else None
if _api is not None:
    _new = _api.PyBytes_FromStringAndSize
    _new.restype = ctypes.py_object
    _new.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    _address = _api.PyBytes_AsString
    _address.restype = ctypes.c_void_p
    _address.argtypes = (ctypes.py_object,)


class OutBytes:
    """``size`` bytes to write through :attr:`view`, then taken once as ``bytes`` by
    :meth:`take`. Until then the object is this one's alone; the view (and any slice of it)
    keeps the storage alive, so a thread still writing after the reader gave up writes into
    memory nobody else sees. Not thread-safe itself; threads may fill disjoint slices."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"negative size {size}")
        self._result: bytes | bytearray
        if _api is not None and size >= IN_PLACE_MIN:
            self._result = _new(None, size)
            # ctypes keeps every array type it makes: one per power of two, not one per size,
            # and only the first ``size`` bytes are ever reached (through the slice).
            kind = ctypes.c_char * (1 << (size - 1).bit_length())
            storage = kind.from_address(_address(self._result))
            # The storage is the bytes object's: the array must keep it alive for the view.
            storage.keep = self._result  # type: ignore[attr-defined]
            self.view = memoryview(storage).cast("B")[:size]
        else:
            self._result = bytearray(size)
            self.view = memoryview(self._result)
        self._taken = False

    def take(self) -> bytes:
        """The filled bytes; the view must not be written after. ValueError if taken twice."""
        if self._taken:
            raise ValueError("the bytes were taken already")
        self._taken = True
        result = self._result
        return result if isinstance(result, bytes) else bytes(result)
