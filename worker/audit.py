"""The audit log of mutations, as HDFS's NameNode writes ``hdfs-audit.log``: one line per
mutation made through the worker, to the ``worker.audit`` logger, once it is done or failed::

    allowed=true	ugi=alice	ip=/10.0.0.7	cmd=delete	src=s3://lake/x	dst=null
    allowed=false	ugi=-	ip=/10.0.0.7	cmd=create	src=file:///etc/x	dst=null	reason=...

Fields are tab-separated (a path may hold spaces), as HDFS's are: ``ugi`` the caller
(``RequestContext.caller``), ``ip`` the client's address (``-`` for a call from inside the
worker), ``cmd`` the operation (``create``, ``append``, ``delete``, ``rename``, ``mkdirs``,
``invalidate``), ``src`` and ``dst`` canonical URIs (``null``: none), and for a mutation that
failed the catalogue's code and message (``worker.common.errors``): refused outside the mount roots,
or failed in the UFS. The same fields go on the record (``extra``) for the JSON log format.
Switched by :data:`worker.keys.AUDIT_LOG`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from worker.common.errors import INTERNAL, kind_of
from worker.request import RequestContext

log = logging.getLogger("worker.audit")


class AuditLog:
    """Writes the audit log when ``enabled``. Stateless, so safe for concurrent mutations."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @contextlib.contextmanager
    def mutation(
        self,
        cmd: str,
        call: RequestContext,
        dst: RequestContext | None = None,
        *,
        refusals_only: bool = False,
    ) -> Iterator[None]:
        """Log ``cmd`` of ``call.uri`` (to ``dst.uri``) once the block ends: allowed (unless
        ``refusals_only``: a check before the mutation itself), or not with the reason the
        block raised (re-raised)."""
        if not self.enabled:
            yield
            return
        try:
            yield
        except Exception as exc:
            kind = kind_of(exc) or INTERNAL
            self._write(cmd, call, dst, f"{kind.code}: {exc}")
            raise
        if not refusals_only:
            self._write(cmd, call, dst, None)

    def _write(
        self, cmd: str, call: RequestContext, dst: RequestContext | None, reason: str | None
    ) -> None:
        fields = {
            "allowed": "false" if reason else "true",
            "ugi": call.caller,
            "ip": _address(call),
            "cmd": cmd,
            "src": call.uri,
            "dst": "null" if dst is None else dst.uri,
        }
        if reason:
            fields["reason"] = " ".join(reason.split())  # one line, whatever the message holds
        log.info("\t".join(f"{k}={v}" for k, v in fields.items()), extra=fields)


def _address(call: RequestContext) -> str:
    """HDFS's ``ip=/1.2.3.4``; ``-`` for a call from inside the worker."""
    client = None if call.exchange is None else call.exchange.client
    return f"/{client}" if client else "-"
