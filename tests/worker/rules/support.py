"""A configuration with per-path rules, for the rules model's tests."""

from config import Config, load_config
from ufs import uri as uris
from worker.keys import build_registry
from worker.rules.live import Rules
from worker.rules.model import Policy

SYNC = "dora.user.file.metadata.sync.interval"
READ = "dora.user.file.readtype.default"


def conf(*rules: str, **defines: str) -> Config:
    """A configuration whose ``dora.worker.path.conf`` is ``rules``; ``defines`` set other keys
    (``_`` for ``.`` in their names, or the name itself)."""
    settings = [f"{k.replace('_', '.')}={v}" for k, v in defines.items()]
    return load_config(
        build_registry(),
        environ={},
        defines=[f"dora.worker.path.conf={', '.join(rules)}", *settings],
    )


def policy(config: Config, uri: str) -> Policy:
    """What the rules of ``config`` say for ``uri``."""
    return Rules.from_config(config).resolve(uris.normalize(uri))
