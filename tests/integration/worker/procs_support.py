"""A real ``dora worker start`` with ``dora.worker.processes`` > 1, and a way to call each of
its processes on purpose: the public port spreads connections at the kernel's choice, so the
tests call the primary and each front on their private unix sockets, which serve the same
routes."""

from pathlib import Path

import httpx

from tests.integration.harness import WorkerProcess


class MultiWorker(WorkerProcess):
    """A worker of ``processes`` processes (a primary and its fronts on one port)."""

    def __init__(self, work: Path, processes: int, *defines: str) -> None:
        self.processes = processes
        super().__init__(work, f"dora.worker.processes={processes}", *defines, wait_s=90)

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
