"""One worker process against two (``dora.worker.processes``), side by side, driven by ``wrk``.

Run with ``.venv/bin/python -m bench.experiments.procs_bench`` (``--repeats``, ``--seconds``,
``--connections``, ``--threads``, ``--profile``). Starts a worker of each kind over one local
directory (a 64 MiB file for random reads, a 16 MiB one read whole), warms both (every page
cached, every front's near-cache and page locations filled), then, in each repeat, runs every
workload against each worker in turn for ``--seconds`` with ``wrk -t<threads> -c<connections>`` (one
thread by default: the load generator shares the machine's cores with the worker, so it must
cost little):

- ``status``: ``GET /v1/status`` of one file (calls/s);
- ``read-64k``: ``GET /v1/read`` of 64 KiB at a random 64 KiB-aligned offset (reads/s);
- ``read-16m``: ``GET /v1/read`` of the whole 16 MiB file (GB/s);
- ``webhdfs-status``: WebHDFS ``GETFILESTATUS`` of one file (calls/s);
- ``open-64k``: WebHDFS ``OPEN``'s data step, pinned to the file's version as its redirect
  names it, of 64 KiB at a random aligned offset (reads/s): Spark's positioned reads.

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
WORKLOADS = ("status", "read-64k", "read-16m", "webhdfs-status", "open-64k")

_RANDOM_READS = """
local path = "{path}"
local count = {count}
math.randomseed({seed})
request = function()
  local offset = math.random(0, count - 1) * {small}
  return wrk.format("GET", "/v1/read?path=" .. path .. "&offset=" .. offset .. "&length={small}")
end
"""
_RANDOM_OPENS = """
local count = {count}
math.randomseed({seed})
request = function()
  local offset = math.random(0, count - 1) * {small}
  return wrk.format("GET", "/webhdfs/v1/file{path}?op=OPEN&data=true&version={version}" ..
                    "&offset=" .. offset .. "&length={small}")
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


def wrk(port: int, target: str, script: Path | None, options: argparse.Namespace) -> str:
    args = [WRK, f"-t{options.threads}", f"-c{options.connections}", f"-d{options.seconds}s",
            "--timeout", "10s"]  # fmt: skip
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
        out = wrk(port, f"/v1/status?path={paths['random']}", None, args)
    elif workload == "read-64k":
        out = wrk(port, "/", scripts / "random.lua", args)
    elif workload == "read-16m":
        out = wrk(port, f"/v1/read?path={paths['whole']}", None, args)
    elif workload == "webhdfs-status":
        out = wrk(port, f"/webhdfs/v1/file{paths['random'][7:]}?op=GETFILESTATUS", None, args)
    else:
        out = wrk(port, "/", scripts / "open.lua", args)
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
    parser.add_argument("--threads", type=int, default=1, help="wrk's threads")
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
        version = f"{RANDOM_FILE}-{(data / 'random.bin').stat().st_mtime_ns}"  # a file's version
        opens = _RANDOM_OPENS.format(path=paths["random"][7:], count=RANDOM_FILE // SMALL,
                                     small=SMALL, version=version,
                                     seed=int(time.time()))  # fmt: skip
        (scripts / "open.lua").write_text(opens)
        workers = {}
        try:
            for processes in (1, 2):
                (base / f"w{processes}").mkdir()
                workers[processes] = start_worker(base / f"w{processes}", data, processes)
                warm(workers[processes][1], paths, scripts, args)
            results: dict[tuple[str, int], list[float]] = {}
            shares: dict[str, list[float]] = {}
            for repeat in range(args.repeats):
                for workload in WORKLOADS:
                    order = (1, 2) if repeat % 2 == 0 else (2, 1)
                    for processes in order:
                        port = workers[processes][1]
                        before = counts(port)
                        value = run(workload, port, paths, scripts, args)
                        results.setdefault((workload, processes), []).append(value)
                        if processes == 2:
                            shares.setdefault(workload, []).append(
                                share(workload, before, counts(port))
                            )
            report(results, args)
            model(results, shares)
            if args.profile:
                show_profiles(workers[2], paths, scripts, args, base)
        finally:
            for worker, _ in workers.values():
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=90)


def counts(port: int) -> dict[str, float]:
    """The worker's counters that tell what its front answered: calls by route (summed over
    the processes), the front's status hits and bytes."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    wanted = {
        "status": r'dora_request_seconds_count\{route="/v1/status"\} (\S+)',
        "read": r'dora_request_seconds_count\{route="/v1/read"\} (\S+)',
        "webhdfs": r'dora_request_seconds_count\{route="/webhdfs/v1/\{path:path\}"\} (\S+)',
        "front_status": r'dora_front_near_cache_hits_total\{kind="status"\} (\S+)',
        "front_bytes": r'dora_bytes_served_total\{source="front"\} (\S+)',
    }
    found = {name: re.search(pattern, text) for name, pattern in wanted.items()}
    return {name: float(match.group(1)) if match else 0.0 for name, match in found.items()}


def share(workload: str, before: dict[str, float], after: dict[str, float]) -> float:
    """The share of a run's calls that the front answered itself."""
    delta = {name: after[name] - before[name] for name in after}
    calls = delta["webhdfs"] if workload in ("webhdfs-status", "open-64k") else delta["read"]
    if workload in ("status", "webhdfs-status"):
        return delta["front_status"] / max(delta["status"] if workload == "status" else calls, 1)
    size = WHOLE_FILE if workload == "read-16m" else SMALL
    return delta["front_bytes"] / size / max(calls, 1)


def model(results: dict[tuple[str, int], list[float]], shares: dict[str, list[float]]) -> None:
    """Per process, from the two-process runs: the front's and the primary's rates (each ran
    on about one core, with wrk and the other beside them), and a 16-core host's figure as 15
    fronts and the primary, each at its rate here."""
    print("\n| workload | front answered | front /s | primary /s | 16 processes (model) |")
    print("|---|---|---|---|---|")
    for workload in WORKLOADS:
        total, part = statistics.median(results[(workload, 2)]), statistics.median(shares[workload])
        front, primary = total * part, total * (1 - part)
        unit = " GB/s" if workload == "read-16m" else ""
        print(f"| {workload} | {part:.0%} | {front:,.2f}{unit} | {primary:,.2f}{unit} | "
              f"{15 * front + primary:,.2f}{unit} |")  # fmt: skip


def report(results: dict[tuple[str, int], list[float]], args: argparse.Namespace) -> None:
    print(f"wrk -t{args.threads} -c{args.connections} -d{args.seconds}s, medians of "
          f"{args.repeats} (min-max); load average {os.getloadavg()[0]:.1f}")  # fmt: skip
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
        command = [WRK, f"-t{args.threads}", f"-c{args.connections}", f"-d{args.seconds + 2}s",
                   "-s", str(scripts / "random.lua"), f"http://127.0.0.1:{port}/"]  # fmt: skip
        load = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        time.sleep(1)
        summary = profile(pid, args.seconds, base / f"{pid}.raw")
        load.wait()
        print(f"\npy-spy, read-64k, {name} (pid {pid}): {summary.samples} samples, "
              f"{summary.waiting:.0%} waiting; of the rest, by own samples:")  # fmt: skip
        for function, share in summary.top_self:
            print(f"  {share:6.1%}  {function}")


if __name__ == "__main__":
    main()
