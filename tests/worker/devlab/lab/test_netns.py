"""Where the lab cannot be made, it says why in one line (its tests skip with that line, and
``dora demo --hosts`` prints it)."""

import shutil
from pathlib import Path

import pytest

from worker.devlab.lab import netns


def test_not_root_is_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert netns.unavailable_reason() == "the lab needs root (network and mount namespaces)"


def test_missing_tools_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    found = shutil.which
    monkeypatch.setattr(
        netns.shutil, "which", lambda tool: None if tool in ("ip", "iptables") else found(tool)
    )
    reason = netns.unavailable_reason()
    assert reason is not None and "\n" not in reason
    assert reason.startswith("the lab needs ip, iptables (")


def test_making_a_lab_where_it_cannot_be_made_raises_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    network = netns.Network(tmp_path, [("w1", 11)])
    with pytest.raises(netns.LabUnavailable, match="needs root"):
        network.create()
