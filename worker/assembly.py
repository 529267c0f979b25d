"""Assembling a worker: the one place that builds the service, its load jobs, the change sink
the feeds apply to, the cluster node and the feeds, and joins them.

Each part sees a narrow protocol of what it uses, never the service's class: load jobs a
``worker.load.source.LoadSource``, the cluster node its ``worker.cluster.node.NodeParts``, the
feeds their sink. So none of them imports ``worker.service``, and the service imports none of
their builders: the import contract "One place assembles the server" (``pyproject.toml``'s
``[tool.importlinter]``) keeps it so. The surfaces see only the service's operations.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path
from typing import Any

from config import Config, ConfigError, PropertyKey
from config.core_keys import WORK_DIR
from pagestore import keys as page_keys
from pagestore.api import PageStore
from pagestore.factory import page_cache
from pagestore.options import PageStoreOptions
from pagestore.owner import ForeignPageDirError
from ufs.adapter import Ufs
from worker.cluster.http import ASGIApp
from worker.cluster.node import ClusterNode, NodeParts
from worker.cluster.view import ClusterView
from worker.feeds.change import CacheSink
from worker.feeds.keys import feed_specs
from worker.feeds.runner import Feeds
from worker.load.manager import LoadManager
from worker.load.options import LoadOptions
from worker.meta import keys as meta_keys
from worker.meta.errors import MetastoreOpenError
from worker.meta.generations import FILE_NAME as GENERATIONS_FILE
from worker.meta.generations import GenerationFile
from worker.meta.manager import MetadataManager
from worker.metrics import Metrics
from worker.rules.live import Rules
from worker.service import WorkerService, mount_roots

log = logging.getLogger(__name__)


class Assembly:
    """A worker's parts, built once and joined: the service (what the surfaces call), and,
    once :meth:`start` knows the port it listens on, its cluster node and change feeds.

    Not thread-safe: build, start and close it from one thread (the parts it builds are
    thread-safe, each as its docstring says)."""

    def __init__(
        self,
        config: Config,
        ufs: Ufs,
        meta: MetadataManager,
        pages: PageStore,
        page_size: int,
        generations: GenerationFile | None = None,
        rules: Rules | None = None,
    ) -> None:
        """Build the service over opened stores. Raises ConfigError for a value that cannot
        be used (mount roots, per-path rules, load job options)."""
        self.config = config
        self._meta = meta
        self._pages = pages
        roots = mount_roots(config)
        self._metrics = Metrics()
        self._changes = CacheSink(roots, meta, pages, self._metrics.registry)
        self.service = WorkerService(
            config,
            ufs,
            meta,
            pages,
            page_size,
            roots=roots,
            rules=rules or Rules.from_config(config),
            metrics=self._metrics,
            changes=self._changes,
            loads=functools.partial(LoadManager, options=LoadOptions.from_config(config)),
            cluster=ClusterView.from_config(config),
            generations=generations,
        )
        self.node: ClusterNode | None = None
        self._feeds: Feeds | None = None

    @classmethod
    def open(cls, config: Config) -> Assembly:
        """Open the metastore and page store the config names and start the page restore.

        The mount roots, the per-path rules and the feeds are checked before anything is
        opened. Raises ConfigError naming the key when a value cannot be used, including a
        store that refuses its directory; what was opened before a failure is closed again."""
        mount_roots(config)
        rules = Rules.from_config(config)
        feed_specs(config)
        ufs = Ufs.from_config(config)
        options = PageStoreOptions.from_config(config)
        pages = page_cache(config, options)
        with contextlib.ExitStack() as opened:
            try:
                meta = MetadataManager.from_config(config, ufs)
            except MetastoreOpenError as exc:
                raise _refused(config, meta_keys.METASTORE_DIR, exc) from exc
            opened.callback(meta.close)
            opened.callback(pages.close)
            pages.charge_restored(rules.charge_of)  # restored pages count against quotas too
            try:
                pages.start()
            except ForeignPageDirError as exc:
                raise _refused(config, page_keys.DIRS, exc) from exc
            generations = _generation_file(options.dirs[0].path / GENERATIONS_FILE)
            if generations is not None:
                opened.callback(generations.close)
            assembly = cls(config, ufs, meta, pages, options.page_size, generations, rules)
            opened.pop_all()
        # Once started: a refused start says only what was wrong, in one line.
        log.info("configuration: %s", config.sources())
        return assembly

    def start(self, bind_host: str, port: int) -> None:
        """Join the cluster (with ``dora.cluster.etcd.endpoints`` set) as the worker that
        listens on ``bind_host``:``port``, and start following the change feeds the config
        names. Raises ConfigError for a feed that cannot be used."""
        parts = NodeParts(
            self.service, self._meta, self._pages, self._changes.lag.arrived,
            self._metrics.registry,
        )  # fmt: skip
        self.node = ClusterNode.start(self.config, parts, bind_host, port)
        self._feeds = Feeds.start(self.config, self._changes, self.node)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind what the cluster puts in front of it (read-your-writes across
        workers), or ``app`` itself outside a cluster."""
        return app if self.node is None else self.node.wrap(app)

    def close(self) -> None:
        """Stop the feeds, leave the cluster (persisting the feed position), then close the
        service (load jobs, metastore, page store). Idempotent."""
        if self._feeds is not None:
            self._feeds.close()
        if self.node is not None:
            self.node.close()
        self.service.close()


def _refused(config: Config, key: PropertyKey[Any], exc: Exception) -> ConfigError:
    """A store refused the directory ``key`` names (or, unset, the one under the work dir);
    ``exc`` names the directory and why."""
    text = config.setting(key).text
    if text:
        return ConfigError(f"{exc} ({key.name}={text})")
    return ConfigError(f"{exc} ({key.name} unset: under {WORK_DIR.name}={config.get(WORK_DIR)})")


def _generation_file(path: Path) -> GenerationFile | None:
    """The near-cache's counters at ``path``, or None (logged) when its disk cannot hold them:
    a full or failing page disk costs same-host clients their near-cache, not the worker."""
    try:
        return GenerationFile(path)
    except OSError as exc:
        log.warning("no near-cache for same-host clients: generation file %s: %s", path, exc)
        return None


def open_service(config: Config) -> WorkerService:
    """The service of :meth:`Assembly.open`, for a caller that runs no cluster node or feeds
    (a test, a benchmark); ``close()`` on the service closes what it holds."""
    return Assembly.open(config).service
