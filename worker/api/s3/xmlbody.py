"""S3's XML: the answers (written as text, element by element, in the order S3 writes them)
and the request bodies of DeleteObjects and CompleteMultipartUpload (parsed with a DOCTYPE
refused outright, so no entity can expand or reach outside)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from email.utils import formatdate
from xml.etree import ElementTree
from xml.sax.saxutils import escape

MEDIA_TYPE = "application/xml"
NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def el(tag: str, value: object) -> str:
    """``<tag>value</tag>``, the value escaped (booleans as S3 writes them)."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return f"<{tag}>{escape(text)}</{tag}>"


def document(tag: str, *parts: str) -> bytes:
    """A whole answer: root element ``tag`` in S3's namespace around ``parts``."""
    return (HEAD + root(tag, *parts)).encode()


def root(tag: str, *parts: str) -> str:
    """Root element ``tag`` in S3's namespace around ``parts``, without the XML declaration."""
    return f'<{tag} xmlns="{NAMESPACE}">{"".join(parts)}</{tag}>'


def iso_time(mtime_ns: int) -> str:
    """A time as S3's listings write it (``2009-10-12T17:50:30.000Z``)."""
    seconds, ns = divmod(mtime_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ns // 1_000_000:03d}Z"


def http_time(mtime_ns: int) -> str:
    """A time as HTTP headers write it (``Last-Modified``)."""
    return formatdate(mtime_ns / 1e9, usegmt=True)


def error(code: str, message: str, resource: str, request_id: str) -> bytes:
    return (HEAD + error_element(code, message, resource, request_id)).encode()


def error_element(code: str, message: str, resource: str, request_id: str) -> str:
    body = el("Code", code) + el("Message", message) + el("Resource", resource)
    return f"<Error>{body}{el('RequestId', request_id)}</Error>"


OWNER = el("ID", "doracache") + el("DisplayName", "doracache")
"""The owner every bucket and object shows: the worker answers as itself, whoever asked."""


def list_buckets(buckets: Iterable[tuple[str, int]]) -> bytes:
    """ListBuckets of (name, created in ns since the epoch) pairs."""
    listed = "".join(
        f"<Bucket>{el('Name', name)}{el('CreationDate', iso_time(created_ns))}</Bucket>"
        for name, created_ns in buckets
    )
    return document("ListAllMyBucketsResult", f"<Owner>{OWNER}</Owner>",
                    f"<Buckets>{listed}</Buckets>")  # fmt: skip


def location() -> bytes:
    """GetBucketLocation: empty, which S3 clients read as us-east-1 (any region signs here)."""
    return f'{HEAD}<LocationConstraint xmlns="{NAMESPACE}"/>'.encode()


def copy_result(tag: str, etag: str, mtime_ns: int) -> bytes:
    """CopyObjectResult / CopyPartResult."""
    return document(tag, el("LastModified", iso_time(mtime_ns)), el("ETag", etag))


@dataclass(frozen=True)
class Part:
    """One part a CompleteMultipartUpload names."""

    number: int
    etag: str


class BadXml(ValueError):
    """A request body that is not the XML the operation takes."""


def _parsed(body: bytes) -> ElementTree.Element:
    if b"<!DOCTYPE" in body.upper() or b"<!ENTITY" in body.upper():
        raise BadXml("a DOCTYPE or ENTITY declaration is not allowed")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise BadXml(str(exc)) from None
    for node in root.iter():
        node.tag = node.tag.rpartition("}")[2]  # S3's namespace is optional in requests
    return root


def _text(node: ElementTree.Element, tag: str) -> str | None:
    found = node.find(tag)
    return None if found is None else (found.text or "")


def parse_delete(body: bytes) -> tuple[list[str], bool]:
    """The keys of a DeleteObjects body and whether it asks for quiet mode."""
    root = _parsed(body)
    if root.tag != "Delete":
        raise BadXml(f"expected <Delete>, got <{root.tag}>")
    keys = []
    for node in root.findall("Object"):
        key = _text(node, "Key")
        if not key:
            raise BadXml("an <Object> without a <Key>")
        keys.append(key)
    quiet = (_text(root, "Quiet") or "false").strip().lower() == "true"
    return keys, quiet


def parse_complete(body: bytes) -> list[Part]:
    """The parts of a CompleteMultipartUpload body, in the order given."""
    root = _parsed(body)
    if root.tag != "CompleteMultipartUpload":
        raise BadXml(f"expected <CompleteMultipartUpload>, got <{root.tag}>")
    parts = []
    for node in root.findall("Part"):
        number, etag = _text(node, "PartNumber"), _text(node, "ETag")
        if number is None or not number.strip().isdigit() or etag is None:
            raise BadXml("a <Part> needs a <PartNumber> and an <ETag>")
        parts.append(Part(int(number), etag.strip().strip('"')))
    if not parts:
        raise BadXml("no <Part>")
    return parts
