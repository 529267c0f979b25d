"""Client processes for the workloads that need more than one process: each makes its own
handle for a contender, then runs a task once per round, all rounds started together.

Processes come from a fork server that has imported the clients once (the parent runs
threads, so it is not forked itself), are started once per group and kept for every round: a
repetition does not pay for starting Python and importing the clients again.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Barrier
from typing import Any

from bench.side.contenders import by_name
from bench.side.handles import Handle
from bench.side.services import SceneInfo

START_TIMEOUT = 300.0


def count_infos(handle: Handle, keys: Sequence[str], seconds: float) -> float:
    """``info`` calls over ``keys``, round and round, for ``seconds``; the number made."""
    clock = time.perf_counter
    deadline = clock() + seconds
    calls = 0
    while clock() < deadline:
        handle.info(keys[calls % len(keys)])
        calls += 1
    return float(calls)


def read_keys(handle: Handle, keys: Sequence[str]) -> float:
    """Read every key whole; the seconds it took."""
    started = time.perf_counter()
    for key in keys:
        handle.read_all(key)
    return time.perf_counter() - started


TASKS: dict[str, Callable[..., float]] = {"rate": count_infos, "shared": read_keys}


def _client(
    contender: str,
    info: SceneInfo,
    tag: str,
    task: str,
    args: tuple[Any, ...],
    drop_after: str | None,
    rounds: int,
    barrier: Barrier,
    results: multiprocessing.Queue[tuple[str, float]],
) -> None:
    """One client process: warm once (for ``rate``), then ``rounds`` rounds."""
    try:
        handle = by_name(contender).make(info, tag)
        if task == "rate":
            handle.info(args[0][0])
    except Exception as exc:  # noqa: BLE001  # reported to the parent, which stops the group
        results.put(("error", 0.0))
        print(f"client {contender}: {type(exc).__name__}: {exc}", flush=True)
        barrier.abort()
        return
    try:
        for _ in range(rounds):
            barrier.wait()
            results.put(("ok", TASKS[task](handle, *args)))
            if drop_after is not None:
                handle.drop(drop_after)
    except threading.BrokenBarrierError:
        pass  # the parent gave up on the group
    finally:
        handle.close()


class ClientGroup:
    """``n`` client processes of one contender running ``task``; :meth:`round` starts a round
    in all of them and returns each one's value. Raises RuntimeError if a client fails. Not
    thread-safe; use as a context manager (processes are joined, or killed by PID)."""

    def __init__(
        self,
        n: int,
        contender: str,
        info: SceneInfo,
        task: str,
        args: tuple[Any, ...],
        rounds: int,
        drop_after: str | None = None,
    ) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        self._n = n
        self._barrier = context.Barrier(n + 1, timeout=START_TIMEOUT)
        self._results: multiprocessing.Queue[tuple[str, float]] = context.Queue()
        self._processes = [
            context.Process(
                target=_client,
                args=(
                    contender,
                    info,
                    f"c{i}",
                    task,
                    args,
                    drop_after,
                    rounds,
                    self._barrier,
                    self._results,
                ),
                daemon=True,
            )
            for i in range(n)
        ]
        for process in self._processes:
            process.start()

    def round(self, timeout: float = 600.0) -> list[float]:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError("a client process failed to start") from None
        values = []
        for _ in range(self._n):
            try:
                status, value = self._results.get(timeout=timeout)
            except queue.Empty:
                raise RuntimeError("a client process did not answer") from None
            if status != "ok":
                raise RuntimeError("a client process failed")
            values.append(value)
        return values

    def close(self) -> None:
        self._barrier.abort()  # clients still waiting for a round end now
        for process in self._processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()

    def __enter__(self) -> ClientGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
