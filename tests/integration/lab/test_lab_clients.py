"""Clients the lab makes in this process (``Lab.client``) stop following its etcd when the lab
stops: they used to go on retrying it, logging "etcd unavailable ... 0 workers" for the rest of
the process (issue 36 item 10)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from worker.cluster.members import RETRY_S
from worker.devlab.lab.lab import Lab
from worker.devlab.lab.netns import LabUnavailable, unavailable_reason

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def watching() -> int:
    return sum(thread.name == "dora-membership-view" for thread in threading.enumerate())


def test_the_labs_clients_stop_following_etcd_when_it_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    before = watching()
    lab = Lab(tmp_path / "lab", workers=1)
    try:
        lab.start()
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    try:
        client = lab.client()
        assert client.ring.workers == (lab.workers[0].address,)  # followed from etcd
        assert client.rings.etcd_available and watching() == before + 1
    finally:
        with caplog.at_level(logging.INFO, logger="worker.cluster"):
            lab.stop()
            time.sleep(3 * RETRY_S)  # what a client still following etcd retries in
    assert not [r.getMessage() for r in caplog.records if "etcd" in r.getMessage()]
    assert watching() == before
