"""Running Ceph's s3-tests (https://github.com/ceph/s3-tests, MIT) against an S3 endpoint: its
configuration file, the selection of its object, listing and multipart tests, and the outcome
of each test read from the run's JUnit XML.

The suite is not on PyPI and its code is not ours to commit: a run takes it from a checkout
named by ``S3TESTS_DIR`` (the directory holding its ``s3tests/`` package)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

import boto3

from tests.integration.s3endpoint.s3tests_plugin import POOL_VARIABLE
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3

DIR_VARIABLE = "S3TESTS_DIR"
SUITE = "s3tests/functional/test_s3.py"

POOL_SIZE = 700
"""Buckets a run may take: one or a few per selected test."""


def suite_dir() -> Path | None:
    """The s3-tests checkout ``S3TESTS_DIR`` names, None when it is unset or empty."""
    given = os.environ.get(DIR_VARIABLE)
    if not given or not (Path(given) / SUITE).is_file():
        return None
    return Path(given)


def configuration(path: Path, host: str, port: int, key_id: str, secret: str) -> Path:
    """An s3tests.conf for one endpoint: every user of the suite is the one key pair."""
    users = "".join(
        f"[{section}]\ndisplay_name = tester\nuser_id = tester\nemail = tester@example.com\n"
        f"access_key = {key_id}\nsecret_key = {secret}\ntenant = tenant\n\n"
        for section in ("s3 main", "s3 alt", "s3 tenant", "iam", "iam root", "iam alt root")
    )
    path.write_text(
        f"[DEFAULT]\nhost = {host}\nport = {port}\nis_secure = False\nssl_verify = False\n\n"
        f"[fixtures]\nbucket prefix = dora-{{random}}-\n\n{users}"
    )
    return path


def make_pool(seaweedfs: LocalS3, prefix: str, count: int = POOL_SIZE) -> list[str]:
    """``count`` empty buckets made in the store, named ``<prefix>-<n>``."""
    store = boto3.client("s3", endpoint_url=seaweedfs.endpoint, aws_access_key_id=ACCESS_KEY,
                         aws_secret_access_key=SECRET_KEY, region_name="us-east-1")  # fmt: skip
    names = [f"{prefix}-{n}" for n in range(count)]
    for name in names:
        store.create_bucket(Bucket=name)
    return names


def start(suite: Path, conf: Path, pool: Iterable[str], report: Path) -> subprocess.Popen[bytes]:
    """The selected tests started against the endpoint ``conf`` names, taking buckets from
    ``pool``, reporting to ``report`` (:func:`outcomes`); the running suite."""
    env = {**os.environ, "S3TEST_CONF": str(conf), POOL_VARIABLE: ",".join(pool),
           "PYTHONPATH": os.pathsep.join((str(suite), str(Path(__file__).parents[3]))),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # fmt: skip
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-p", "tests.integration.s3endpoint.s3tests_plugin",
            "-p", "pytest_timeout", "--timeout=60",
            "-o", "addopts=",
            f"--junitxml={report}", "--rootdir", str(suite), SUITE]  # fmt: skip
    with report.with_suffix(".log").open("wb") as log:  # the suite's output, for a failure
        return subprocess.Popen(args, cwd=suite, env=env, stdout=log, stderr=subprocess.STDOUT)


def outcomes(report: Path) -> dict[str, str]:
    """Each test's outcome in a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        if "name" not in case.attrib:
            continue  # an interrupted run's last, unnamed record
        tags = {child.tag for child in case}
        outcome = (
            "failed"
            if tags & {"failure", "error"}
            else "skipped"
            if "skipped" in tags
            else "passed"
        )
        found[case.attrib["name"]] = outcome
    return found
