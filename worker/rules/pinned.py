"""A rule's ``pin`` applied to the pages cached already, not only to those stored next.

The page cache pins a file a rule covers as its pages are stored (``PageStore.pin_when``).
Pages cached before the rule said so are pinned here: the pages a restore found, once the
restore is done (until then they are evictable, as those of a ``dora fs pin -R`` are), and on
each reload of the rules, the pages of every file whose rule now says ``pin``. A file whose rule
no longer says it is unpinned, unless ``dora fs pin`` pinned it (``by_hand``: those pins are kept
in ``pins.json`` and stay).

The bound on pinned bytes (``dora.worker.page.store.pin.max``) holds for rules as for
``dora fs pin``, but a rule is not refused: the files are pinned in URI order, their pages
as far as the bound has room, the rest stay evictable; when the bound is reached the log says
so once per start or reload, naming the rule of the file whose pages filled it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pagestore.api import PageStore
from pagestore.keys import PIN_MAX
from worker.rules.live import Rules
from worker.rules.model import Rule
from worker.rules.ruleset import RuleSet

log = logging.getLogger(__name__)


class RulePins:
    """Applies ``rules``' pins to what ``pages`` holds. ``by_hand(uri)``: whether a ``dora fs
    pin`` covers ``uri``. Thread-safe: ``_lock`` keeps one application at a time, each from the
    rule set the one before applied (``_applied``) to the one in force then, so applications
    that run late or out of order still end at the rules in force."""

    def __init__(self, rules: Rules, pages: PageStore, by_hand: Callable[[str], bool]) -> None:
        self._rules = rules
        self._pages = pages
        self._by_hand = by_hand
        self._lock = threading.Lock()
        self._applied: RuleSet | None = None

    def start(self) -> None:
        """Pin the restored pages of the files the rules pin, in the background once the restore
        is done, and follow every reload of the rules (in the background too: a reload found
        by a lookup is in a request's thread, and this goes through every cached file)."""
        self._rules.on_reload(self.reloaded)
        self.reloaded()

    def reloaded(self, *_: RuleSet) -> None:
        """A :meth:`Rules.on_reload` listener: :meth:`apply` the rules, in another thread."""
        threading.Thread(target=self.apply, name="rule-pins", daemon=True).start()

    def apply(self) -> int:
        """Pin the cached files the rules in force pin and unpin those only the rules applied
        before pinned; how many files changed. Waits for the store to be ready."""
        with self._lock:
            before, after = self._applied, self._rules.current()
            self._applied = after
            uris = self._pages.file_uris()
            limit = self._pages.stats().pin_limit_bytes
            full = False
            changed = 0
            for fid, uri in sorted(uris.items(), key=lambda item: item[1]):
                rule = after.found(uri).get("pin")
                was = before is not None and before.resolve(uri).pin
                if rule is not None and rule.settings.pin:
                    if not was:
                        self._pages.pin(fid)
                        changed += 1
                        full = full or self._full(limit, rule, uri)
                elif was and not self._by_hand(uri):
                    self._pages.pin(fid, pinned=False)
                    changed += 1
            return changed

    def _full(self, limit: int, rule: Rule, uri: str) -> bool:
        """Whether the pinned bytes reached ``limit`` once ``rule`` pinned ``uri`` (logged)."""
        if self._pages.stats().pinned_bytes + self._pages.page_size <= limit:
            return False
        log.warning(
            "pins of rule %s: %s reach %s (%d bytes); pages of %s and of files after it"
            " stay evictable while the bound has no room",
            rule.origin,
            rule.text,
            PIN_MAX.name,
            limit,
            uri,
        )
        return True
