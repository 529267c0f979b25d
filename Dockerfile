# syntax=docker/dockerfile:1
# The doracache worker image, the Helm chart's default ghcr.io/doracache/doracache:
#   docker build -t ghcr.io/doracache/doracache:0.1.0 .
# tests/integration/image/test_image.py builds it with buildah on a Debian base made by mmdebstrap
# (--build-arg BASE_IMAGE=...), runs the worker from it and checks it against the chart.

# Any Debian-like image with Python 3.11+ as python3 (and its venv module) and useradd: the
# Python project's slim image by default, Debian's own python3 in the test. The package goes into
# a venv, so neither base's own Python packages nor its PEP 668 marker matter.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

# A fixed uid and gid: the chart runs the worker as 10001:10001 (worker.securityContext) and
# chowns its hostPath volumes to them.
RUN groupadd --system --gid 10001 dora \
 && useradd --system --uid 10001 --gid dora --home-dir /home/dora --create-home \
        --shell /usr/sbin/nologin dora

ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/doracache/venv/bin:$PATH

# Only what the package needs to build: pyproject.toml names README.md as its readme.
COPY pyproject.toml README.md /opt/doracache/src/
COPY config /opt/doracache/src/config/
COPY ufs /opt/doracache/src/ufs/
COPY pagestore /opt/doracache/src/pagestore/
COPY worker /opt/doracache/src/worker/

# The package with the worker's dependencies (the [worker] extra; no dev or spark extras), then
# pip and setuptools leave the venv: the image runs the worker and builds nothing. pip's cache is
# a build cache mount, so it stays out of the image.
RUN --mount=type=cache,target=/root/.cache/pip \
    python3 -m venv /opt/doracache/venv \
 && /opt/doracache/venv/bin/python -m pip install '/opt/doracache/src[worker]' \
 && /opt/doracache/venv/bin/python -m pip uninstall --yes pip setuptools

USER 10001:10001
WORKDIR /home/dora

# The REST API (dora.worker.http.port). A worker listens on 127.0.0.1 unless
# dora.worker.http.bind.host says otherwise: the chart sets it, `docker run` needs
# -e DORA_WORKER_HTTP_BIND_HOST=0.0.0.0 (with -e DORA_WORKER_SECURITY_TOKEN=...).
EXPOSE 28080

# /healthz needs no token. The port follows DORA_WORKER_HTTP_PORT when it is set; python3 and
# its stdlib only, as the chart's exec probes (files/probe.py) use.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('DORA_WORKER_HTTP_PORT', '28080'), timeout=3)"]

# The chart replaces both: its command is `dora worker start --conf <file>`, its args are
# worker.extraArgs. Here arguments after the image name are passed the same way, e.g.
# `docker run IMAGE -Ddora.worker.ufs.roots=s3://bucket/warehouse`.
ENTRYPOINT ["dora", "worker", "start"]
CMD []
