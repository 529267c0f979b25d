"""Emulated hosts: one network namespace each, joined by veth pairs to one bridge in a private
subnet (10.203.N.0/24), and one persistent mount namespace each with a tmpfs of its own over the
lab's ``private`` directory, so that a host's work and page directories exist on that host only
(a client decides "same host" by whether it can open the worker's files).

Every object a lab makes is named ``dlab<id>-...`` and recorded in ``/run/dlab/<id>.json`` with
the PID of the process that owns it; objects whose owner is dead (an interrupted run) are removed
before a new lab is made. Nothing outside those objects is touched, and no host has a route
beyond the lab's subnet.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from worker.spark.procs import process_alive

PREFIX = "dlab"
STATE_DIR = Path("/run/dlab")
SUBNET = "10.203.{}.{}"
# The controlling process (tests, the demo's driver of the lab) reaches the hosts from here.
GATEWAY_OCTET = 1
_TOOLS = ("ip", "iptables", "nsenter", "unshare", "mount", "umount")


class LabUnavailable(RuntimeError):
    """Network namespaces cannot be made here; the message is one line saying why."""


def unavailable_reason() -> str | None:
    """Why no lab can be made on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the lab needs root (network and mount namespaces)"
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        return f"the lab needs {', '.join(missing)} (iproute2, iptables, util-linux) on PATH"
    return None


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise LabUnavailable(f"{' '.join(argv)} failed: {done.stderr.strip() or done.returncode}")
    return done


@dataclass(frozen=True)
class Host:
    """One emulated host: its name in the lab, address, network namespace, the root side of
    its veth, its mount namespace file and its private directory (a tmpfs on this host only).
    Immutable, so thread-safe."""

    name: str
    address: str
    netns: str
    veth: str
    mount_ns: Path
    private: Path

    def command(self, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        """``argv`` run on this host (both namespaces entered; nsenter execs, so the PID of the
        process started is the PID of ``argv``)."""
        where = [f"--wd={cwd}"] if cwd is not None else []
        return [
            "nsenter",
            f"--net=/run/netns/{self.netns}",
            f"--mount={self.mount_ns}",
            *where,
            "--",
            *argv,
        ]


@contextmanager
def _locked() -> Iterator[None]:
    """Labs are made and cleaned one at a time (concurrent test processes each make one)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with (STATE_DIR / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ensure_private_state_dir() -> None:
    """Mount namespace files can be bound only on a mount of private propagation: make
    ``/run/dlab`` one (a bind of itself) if it is not yet."""
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    if not any(line.split()[4] == str(STATE_DIR) for line in mounts):
        _run("mount", "--bind", str(STATE_DIR), str(STATE_DIR))
    _run("mount", "--make-private", str(STATE_DIR))


class Network:
    """The bridge, the hosts and their namespaces of one lab. :meth:`create` makes them,
    :meth:`destroy` removes them (idempotent). Not thread-safe; one owner process."""

    def __init__(self, root: Path, hosts: Sequence[tuple[str, int]]) -> None:
        self.root = root
        self.id = os.urandom(2).hex()
        self.bridge = f"{PREFIX}{self.id}-br"
        self._names = list(hosts)
        self.subnet = 0
        self.hosts: dict[str, Host] = {}

    @property
    def gateway(self) -> str:
        return SUBNET.format(self.subnet, GATEWAY_OCTET)

    def create(self) -> Network:
        """Clean what interrupted runs left, then make this lab's objects. Raises
        LabUnavailable (one line) where namespaces cannot be made."""
        reason = unavailable_reason()
        if reason is not None:
            raise LabUnavailable(reason)
        with _locked():
            clean_stale()
            _ensure_private_state_dir()
            self.subnet = _free_subnet()
            self._record()
            (STATE_DIR / self.id).mkdir()
        try:
            self._make_bridge()
            for name, octet in self._names:
                self.hosts[name] = self._make_host(name, SUBNET.format(self.subnet, octet))
        except BaseException:
            self.destroy()
            raise
        return self

    def _record(self) -> None:
        state = {"pid": os.getpid(), "subnet": self.subnet, "root": str(self.root)}
        (STATE_DIR / f"{self.id}.json").write_text(json.dumps(state))

    def _make_bridge(self) -> None:
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")

    def _make_host(self, name: str, address: str) -> Host:
        netns = f"{PREFIX}{self.id}-{name}"
        veth, peer = netns, f"{netns}p"
        _run("ip", "netns", "add", netns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", veth, "master", self.bridge, "up")
        _run("ip", "link", "set", peer, "netns", netns)
        inside = ("ip", "netns", "exec", netns, "ip")
        _run(*inside, "link", "set", peer, "name", "eth0")
        _run(*inside, "addr", "add", f"{address}/24", "dev", "eth0")
        _run(*inside, "link", "set", "eth0", "up")
        _run(*inside, "link", "set", "lo", "up")
        private = self.root / "private"
        private.mkdir(parents=True, exist_ok=True)
        mount_ns = STATE_DIR / self.id / f"{name}.mnt"
        mount_ns.touch()
        # The namespace outlives the unshare process: it is bound to ``mount_ns``.
        tmpfs = ("mount", "-t", "tmpfs", "-o", "size=2g", f"{PREFIX}-{name}", str(private))
        _run("unshare", f"--mount={mount_ns}", "--propagation", "private", *tmpfs)
        return Host(name, address, netns, veth, mount_ns, private / name)

    def link(self, host: str, up: bool) -> None:
        """Set ``host``'s link up or down (down: no packet reaches it or leaves it)."""
        _run("ip", "link", "set", self.hosts[host].veth, "up" if up else "down")

    def partition(self, host: str, peer: str, cut: bool) -> None:
        """Cut (or heal) ``host`` off from ``peer`` alone: ``peer``'s firewall drops every
        packet between them, silently, as a lost route does; both keep every other link."""
        action = "-A" if cut else "-D"
        address = self.hosts[host].address
        firewall = ("ip", "netns", "exec", self.hosts[peer].netns, "iptables", action)
        _run(*firewall, "INPUT", "-s", address, "-j", "DROP")
        _run(*firewall, "OUTPUT", "-d", address, "-j", "DROP")

    def destroy(self) -> None:
        """Stop what still runs in the lab's namespaces (by PID), remove the namespaces, links,
        bridge and mount namespaces. Idempotent."""
        with _locked():
            _remove(self.id)


def _free_subnet() -> int:
    """The lowest 10.203.N.0/24 that no live lab uses and no interface here is in."""
    taken = set()
    for state in STATE_DIR.glob("*.json"):
        taken.add(json.loads(state.read_text())["subnet"])
    addresses = _run("ip", "-o", "-4", "addr", "show").stdout
    for n in range(1, 255):
        if n not in taken and f" 10.203.{n}." not in addresses:
            return n
    raise LabUnavailable("every 10.203.N.0/24 subnet is in use")


def clean_stale() -> None:
    """Remove the objects of labs whose owner process is gone, and ``dlab`` objects no live
    lab owns (the caller holds the lock)."""
    live = set()
    for state in STATE_DIR.glob("*.json"):
        lab_id = state.stem
        if process_alive(json.loads(state.read_text())["pid"]):
            live.add(lab_id)
        else:
            _remove(lab_id)
    for name in _netns_names() + _link_names():
        lab_id = name[len(PREFIX) : len(PREFIX) + 4]
        if name.startswith(PREFIX) and lab_id not in live:
            _remove(lab_id)


def _netns_names() -> list[str]:
    return [line.split()[0] for line in _run("ip", "netns", "list").stdout.splitlines() if line]


def _link_names() -> list[str]:
    names = []
    for line in _run("ip", "-o", "link", "show").stdout.splitlines():
        names.append(line.split(":")[1].strip().split("@")[0])
    return names


def _remove(lab_id: str) -> None:
    """Everything of lab ``lab_id``: its processes (the PIDs in its namespaces), namespaces,
    links, mount namespaces and state."""
    own = f"{PREFIX}{lab_id}-"
    for netns in _netns_names():
        if netns.startswith(own):
            _kill_inside(netns)
            _run("ip", "netns", "delete", netns, check=False)
    for link in _link_names():
        if link.startswith(own):
            _run("ip", "link", "delete", link, check=False)
    mounts = STATE_DIR / lab_id
    if mounts.is_dir():
        for mount_ns in mounts.glob("*.mnt"):
            _run("umount", str(mount_ns), check=False)
            mount_ns.unlink(missing_ok=True)
        mounts.rmdir()
    (STATE_DIR / f"{lab_id}.json").unlink(missing_ok=True)


def _kill_inside(netns: str) -> None:
    """SIGKILL every process still in ``netns`` (only lab processes live there; the lab
    stops its own before, so these are an interrupted run's)."""
    pids = [int(p) for p in _run("ip", "netns", "pids", netns, check=False).stdout.split()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
