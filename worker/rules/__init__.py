"""The rules model: every per-path decision (freshness, admission, pinning, TTL, quota) read
from one ordered list of rules, resolved once per request (docs/cache-policy.md, "Cache policy:
rules").

- :mod:`worker.rules.model`: what a rule sets (:class:`~worker.rules.model.Settings`), a rule,
  and what applies to one URI (:class:`~worker.rules.model.Policy`);
- :mod:`worker.rules.parse`: the sources read into rules: the rules file, the prefix table of
  ``dora.worker.path.conf`` and the include/exclude globs;
- :mod:`worker.rules.ruleset`: matching by prefix and glob, and the one precedence;
- :mod:`worker.rules.live`: the rules in force, re-read when the file changes (``reload``);
- :mod:`worker.rules.admission`: the memory of first reads that second-read admission needs
  (the reader decides admission: ``worker.reader.Reader.admit``);
- :mod:`worker.rules.ttl`: the sweep that frees what a ``ttl`` rule says has lived long enough.
"""
