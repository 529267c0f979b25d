"""py-spy recordings of the worker (or of the benchmark process itself) during one workload,
summarised as the functions with the most samples: on the stack's top (self) and anywhere on
it (total). Frames are grouped by function and file, not by line.

py-spy must be able to attach (``ptrace``: root, or ``CAP_SYS_PTRACE``). It samples without
stopping the target (``--nonblocking``), so the profiled pass is an extra pass, not one of the
timed repetitions.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PY_SPY = str(Path(sys.executable).with_name("py-spy"))
RATE = 200
TOP = 12
_LINE = re.compile(r"^(.*) (\d+)$")
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


_WAITS = {
    ("select", "selectors.py"),
    ("wait", "threading.py"),
    ("_wait_for_tstate_lock", "threading.py"),
    ("get", "queue.py"),
    ("_worker", "thread.py"),
}


@dataclass(frozen=True)
class Summary:
    """A recording summarised: ``top_self`` and ``top_total`` are shares of the samples that
    were not waiting (``waiting`` is the share that was)."""

    samples: int
    waiting: float
    top_self: list[tuple[str, float]]
    top_total: list[tuple[str, float]]


@dataclass(frozen=True)
class ProfileSpec:
    """What to profile: a workload, optionally only rows containing ``contender``, in the
    ``worker`` process or the ``bench`` process."""

    workload: str
    contender: str | None = None
    target: str = "worker"

    @classmethod
    def parse(cls, text: str, target: str) -> ProfileSpec:
        """``WORKLOAD`` or ``WORKLOAD:CONTENDER``."""
        workload, _, contender = text.partition(":")
        return cls(workload, contender or None, target)

    def matches(self, workload: str, row: str) -> bool:
        return workload == self.workload and (self.contender is None or self.contender in row)


class Recording:
    """One py-spy process sampling ``pid`` into ``raw_file`` (collapsed stacks) until
    :meth:`stop`. Raises RuntimeError if py-spy cannot start."""

    def __init__(self, pid: int, raw_file: Path) -> None:
        self.pid = pid
        self.raw_file = raw_file
        raw_file.parent.mkdir(parents=True, exist_ok=True)
        args = [
            PY_SPY,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--rate",
            str(RATE),
            "--nonblocking",
            "--output",
            str(raw_file),
        ]
        self._process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # py-spy prints its first line once it is attached and sampling.
        assert self._process.stdout is not None
        first = self._process.stdout.readline().decode(errors="replace")
        if "Sampling" not in first:
            self._process.wait()
            raise RuntimeError(f"py-spy did not attach to {pid}: {first.strip()}")

    def stop(self) -> str:
        """Stop sampling and return the collapsed stacks recorded."""
        self._process.send_signal(signal.SIGINT)
        output, _ = self._process.communicate(timeout=60)
        if not self.raw_file.exists():
            raise RuntimeError(f"py-spy wrote no profile: {output.decode(errors='replace')}")
        return self.raw_file.read_text()


def function_of(frame: str) -> str:
    """``func (path/to/module.py:12)`` → ``func (to/module.py)``."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    parts = match["file"].split("/")
    return f"{match['func']} ({'/'.join(parts[-2:])})"


def waiting(function: str) -> bool:
    """Whether a stack ending in ``function`` waits (an event loop's select, a lock or queue
    wait, an idle pool thread) rather than works. py-spy leaves out threads it sees idle, but
    catches some in the moment they enter or leave a wait."""
    name, _, where = function.partition(" (")
    return (name.rsplit(".", 1)[-1], where.rstrip(")").rsplit("/", 1)[-1]) in _WAITS


def summarize(raw: str, top: int = TOP) -> Summary:
    """The samples of py-spy's collapsed stacks, the share that waits, and the ``top``
    functions by self and total share of the samples that work. Frames every working stack of
    a thread starts with (``main``, the event loop's ``run_forever``, ...) are in 100% of them
    and say nothing: they are left out of the totals."""
    stacks: list[tuple[list[str], int]] = []
    samples = waits = 0
    for line in raw.splitlines():
        match = _LINE.match(line.strip())
        frames = [function_of(f) for f in match[1].split(";") if f] if match else []
        if not match or not frames:
            continue
        count = int(match[2])
        samples += count
        if waiting(frames[-1]):
            waits += count
        else:
            stacks.append((frames, count))
    busy = samples - waits
    if not busy:
        return Summary(samples, 1.0 if samples else 0.0, [], [])
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    common = _common_prefixes(stacks)
    for frames, count in stacks:
        own[frames[-1]] += count
        for name in set(frames[len(common[frames[0]]) :]) | {frames[-1]}:
            total[name] += count
    return Summary(
        samples,
        waits / samples,
        [(name, n / busy) for name, n in own.most_common(top)],
        [(name, n / busy) for name, n in total.most_common(top)],
    )


def _common_prefixes(stacks: list[tuple[list[str], int]]) -> dict[str, list[str]]:
    """For each thread root (first frame), the frames all its stacks start with."""
    common: dict[str, list[str]] = {}
    for frames, _ in stacks:
        prefix = common.setdefault(frames[0], frames[:-1])
        n = 0
        while n < len(prefix) and n < len(frames) - 1 and prefix[n] == frames[n]:
            n += 1
        del prefix[n:]
    return common


def format_top(frames: list[tuple[str, float]], limit: int = 5) -> str:
    """``func (mod.py) 35%; ...``: the first ``limit`` frames in one line."""
    return "; ".join(f"{name} {share:.0%}" for name, share in frames[:limit])
