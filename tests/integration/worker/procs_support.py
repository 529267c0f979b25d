"""A real ``dora worker start`` with ``dora.worker.processes`` > 1, and a way to call each of
its processes on purpose: the public port spreads connections at the kernel's choice, so the
tests call the primary and each front on their private unix sockets, which serve the same
routes."""

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

DORA = str(Path(sys.executable).with_name("dora"))


class MultiWorker:
    """A worker of ``processes`` processes, stopped by PID (SIGTERM) by :meth:`stop`."""

    def __init__(self, work: Path, processes: int, *defines: str) -> None:
        self.state = work / "state.json"
        self.log_path = work / "worker.log"
        self.log = self.log_path.open("ab")
        self.processes = processes
        args = [DORA, "worker", "start", "-Ddora.worker.http.port=0", f"-Ddora.work.dir={work}",
                f"-Ddora.worker.processes={processes}", *(f"-D{d}" for d in defines),
                "--state-file", str(self.state)]  # fmt: skip
        self.state.unlink(missing_ok=True)
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for(self.state.exists, self._alive, "the worker did not write its state file")
        except BaseException:
            self.process.kill()
            self.process.wait()
            raise
        info = json.loads(self.state.read_text())
        self.address = f"{info['host']}:{info['port']}"
        self.http = httpx.Client(base_url=f"http://{self.address}", timeout=30)

    def _alive(self) -> None:
        assert self.process.poll() is None, self.log_path.read_text()

    def fronts(self) -> dict[str, int]:
        """The front processes now running: private socket path -> PID."""
        found = {}
        for pid in children(self.process.pid):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"worker.procs.frontproc" in args:
                found[args[args.index(b"--socket") + 1].decode()] = pid
        return found

    def primary_socket(self) -> str:
        """The primary's private socket, as its fronts are told it."""
        pid = next(iter(self.fronts().values()))
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return args[args.index(b"--primary-socket") + 1].decode()

    def sockets(self) -> list[str]:
        """The private socket of every process: the primary's first, then the fronts'."""
        return [self.primary_socket(), *sorted(self.fronts())]

    def stop(self) -> int:
        self.http.close()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=90)
        self.log.close()
        return code


def on_socket(path: str, token: str | None = None) -> httpx.Client:
    """An HTTP client of one process's private unix socket (sending ``token``, if any)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    transport = httpx.HTTPTransport(uds=path)
    return httpx.Client(transport=transport, base_url="http://worker", timeout=30, headers=headers)


def children(pid: int) -> list[int]:
    """The PIDs of the direct children of ``pid`` (started by any of its threads)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue  # the thread ended
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(
    done: Callable[[], object],
    check: Callable[[], None] = lambda: None,
    what: str = "",
    seconds: float = 90,
) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        check()
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
