"""Who made a call (``RequestContext.caller``), as far as the request shows it.

In order: the subject CN of the client certificate the TLS handshake verified (mutual TLS,
``worker.tls.clientcert``); else, on WebHDFS, the user its client names (``user.name``, and
``doas`` for a proxied user: ``alice via bob``, as HDFS's audit log shows a proxy user's
``ugi``), which nothing verifies (Hadoop's simple authentication); else ``-``.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request

from worker.api.params import REST, Query
from worker.api.webhdfs_paths import PREFIX as WEBHDFS_PREFIX
from worker.request import UNKNOWN_CALLER
from worker.tls.clientcert import subject_name

# WebHDFS's names match in any case (as Hadoop's ParamFilter matches them); only names are read
# here, never refused, so the wording is REST's (webhdfs_errors.DIALECT imports the surfaces).
_NAMES = replace(REST, fold_case=True)


def caller_of(request: Request) -> str:
    """The caller of ``request``."""
    proved = subject_name(request.scope)
    if proved is not None:
        return proved
    if request.scope["path"].startswith(WEBHDFS_PREFIX):
        query = Query(request.query_params, _NAMES)
        user, proxied = query.text("user.name"), query.text("doas")
        if proxied and user:
            return f"{proxied} via {user}"
        return proxied or user or UNKNOWN_CALLER
    return UNKNOWN_CALLER
