"""One worker process against two (``dora.worker.processes``), side by side, driven by ``wrk``.

Run with ``.venv/bin/python -m bench.procs_bench`` (``--repeats``, ``--seconds``,
``--connections``, ``--profile``). Starts a worker of each kind over one local directory (a
64 MiB file for random reads, a 16 MiB one read whole), warms both (every page cached, every
front's near-cache and page locations filled), then, in each repeat, runs every workload
against each worker in turn for ``--seconds`` with ``wrk -t1 -c<connections>`` (one wrk
thread: the load generator shares the machine's cores with the worker, so it must cost little):

- ``status``: ``GET /v1/status`` of one file (calls/s);
- ``read-64k``: ``GET /v1/read`` of 64 KiB at a random 64 KiB-aligned offset (reads/s);
- ``read-16m``: ``GET /v1/read`` of the whole 16 MiB file (GB/s).

Plain HTTP, as a remote client sees it (the fronts use the short-circuit reader themselves:
that is how they read pages). Prints the medians (min-max) and the ratio two/one. With
``--profile``, records one process of the two-process worker with py-spy during a ``read-64k``
run and prints the functions with the most samples of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.side.profiling import Summary, summarize

WRK = "/usr/bin/wrk"
PY_SPY = str(Path(sys.executable).with_name("py-spy"))
SMALL = 64 << 10
RANDOM_FILE = 64 << 20
WHOLE_FILE = 16 << 20
WORKLOADS = ("status", "read-64k", "read-16m")

_RANDOM_READS = """
local path = "{path}"
local count = {count}
math.randomseed({seed})
request = function()
  local offset = math.random(0, count - 1) * {small}
  return wrk.format("GET", "/v1/read?path=" .. path .. "&offset=" .. offset .. "&length={small}")
end
"""


def start_worker(base: Path, data: Path, processes: int) -> tuple[subprocess.Popen[bytes], int]:
    """A ``dora worker start`` of ``processes`` processes and its port."""
    state = base / "state.json"
    args = [sys.executable, "-m", "worker.cli.main", "worker", "start",
            f"-Ddora.work.dir={base / 'work'}", "-Ddora.worker.http.port=0",
            f"-Ddora.worker.ufs.roots=file://{data}", "-Ddora.worker.page.store.sizes=512MB",
            f"-Ddora.worker.processes={processes}", "--state-file", str(state)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DORA_")}
    worker = subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not state.exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise RuntimeError("the worker did not start")
        time.sleep(0.05)
    return worker, int(json.loads(state.read_text())["port"])


def wrk(port: int, target: str, script: Path | None, seconds: float, connections: int) -> str:
    args = [WRK, "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s"]
    if script is not None:
        args += ["-s", str(script)]
    url = f"http://127.0.0.1:{port}{target}"
    return subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout


def figure(output: str, workload: str) -> float:
    """Requests/s, or GB/s for the whole-file reads, from wrk's summary."""
    if "Non-2xx" in output or "Socket errors" in output:
        raise RuntimeError(f"{workload}: wrk saw errors:\n{output}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    return rate * WHOLE_FILE / 1e9 if workload == "read-16m" else rate


def run(
    workload: str, port: int, paths: dict[str, str], scripts: Path, args: argparse.Namespace
) -> float:
    if workload == "status":
        out = wrk(port, f"/v1/status?path={paths['random']}", None, args.seconds, args.connections)
    elif workload == "read-64k":
        out = wrk(port, "/", scripts / "random.lua", args.seconds, args.connections)
    else:
        out = wrk(port, f"/v1/read?path={paths['whole']}", None, args.seconds, args.connections)
    return figure(out, workload)


def warm(port: int, paths: dict[str, str], scripts: Path, args: argparse.Namespace) -> None:
    """Every page cached (read through the primary), then every process's near-cache and page
    locations filled by a short run of each workload."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        for path in paths.values():
            client.get("/v1/read", params={"path": path}).raise_for_status()
    for workload in WORKLOADS:
        run(workload, port, paths, scripts, argparse.Namespace(**{**vars(args), "seconds": 2}))


def profile(pid: int, seconds: int, out: Path) -> Summary:
    """py-spy's samples of ``pid`` for ``seconds``, summarised (waits apart)."""
    subprocess.run([PY_SPY, "record", "--pid", str(pid), "--duration", str(seconds),
                    "--format", "raw", "--output", str(out), "--nonblocking"],
                   capture_output=True, check=True)  # fmt: skip
    return summarize(out.read_text())


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="procs-bench-") as tmp:
        base = Path(tmp)
        data = base / "data"
        data.mkdir()
        (data / "random.bin").write_bytes(os.urandom(RANDOM_FILE))
        (data / "whole.bin").write_bytes(os.urandom(WHOLE_FILE))
        paths = {name: f"file://{data}/{name}.bin" for name in ("random", "whole")}
        scripts = base / "scripts"
        scripts.mkdir()
        lua = _RANDOM_READS.format(path=paths["random"], count=RANDOM_FILE // SMALL, small=SMALL,
                                   seed=int(time.time()))  # fmt: skip
        (scripts / "random.lua").write_text(lua)
        workers = {}
        try:
            for processes in (1, 2):
                (base / f"w{processes}").mkdir()
                workers[processes] = start_worker(base / f"w{processes}", data, processes)
                warm(workers[processes][1], paths, scripts, args)
            results: dict[tuple[str, int], list[float]] = {}
            for repeat in range(args.repeats):
                for workload in WORKLOADS:
                    order = (1, 2) if repeat % 2 == 0 else (2, 1)
                    for processes in order:
                        value = run(workload, workers[processes][1], paths, scripts, args)
                        results.setdefault((workload, processes), []).append(value)
            report(results, args)
            if args.profile:
                show_profiles(workers[2], paths, scripts, args, base)
        finally:
            for worker, _ in workers.values():
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=90)


def report(results: dict[tuple[str, int], list[float]], args: argparse.Namespace) -> None:
    print(f"wrk -t1 -c{args.connections} -d{args.seconds}s, medians of {args.repeats} (min-max); "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| workload | 1 process | 2 processes | ratio |")
    print("|---|---|---|---|")
    for workload in WORKLOADS:
        unit = "GB/s" if workload == "read-16m" else "/s"
        cells = []
        for processes in (1, 2):
            values = results[(workload, processes)]
            cells.append(f"{statistics.median(values):,.2f} {unit} "
                         f"({min(values):,.2f}-{max(values):,.2f})")  # fmt: skip
        ratio = statistics.median(results[(workload, 2)]) / statistics.median(
            results[(workload, 1)]
        )
        print(f"| {workload} | {cells[0]} | {cells[1]} | {ratio:.2f}x |")


def show_profiles(
    worker: tuple[subprocess.Popen[bytes], int],
    paths: dict[str, str],
    scripts: Path,
    args: argparse.Namespace,
    base: Path,
) -> None:
    process, port = worker
    pids = {"primary": process.pid}
    pids.update({f"front {i}": pid for i, pid in enumerate(children(process.pid))})
    for name, pid in pids.items():
        load = subprocess.Popen([WRK, "-t1", f"-c{args.connections}", f"-d{args.seconds + 2}s",
                                 "-s", str(scripts / "random.lua"), f"http://127.0.0.1:{port}/"],
                                stdout=subprocess.DEVNULL)  # fmt: skip
        time.sleep(1)
        summary = profile(pid, args.seconds, base / f"{pid}.raw")
        load.wait()
        print(f"\npy-spy, read-64k, {name} (pid {pid}): {summary.samples} samples, "
              f"{summary.waiting:.0%} waiting; of the rest, by own samples:")  # fmt: skip
        for function, share in summary.top_self:
            print(f"  {share:6.1%}  {function}")


if __name__ == "__main__":
    main()
