"""The progress line of copies: drawn only when enabled, at most every REDRAW_S, never in the
way of the per-file lines."""

import io

import pytest

from worker.cli.fs.progress import REDRAW_S, Progress, progress_line


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_shows_share_bytes_files_and_rate() -> None:
    line = progress_line(3 << 20, 4 << 20, 1, 2, 2.0)
    assert line == f"[{'#' * 22:<30}]  75.0%  3.0 MiB/4.0 MiB  1/2 files  1.5 MiB/s"
    assert progress_line(0, 0, 0, 0, 0.0).startswith(f"[{'':<30}]   0.0%  0 B/0 B  0/0 files")


def test_a_disabled_progress_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    progress = Progress(10, 1, enabled=False, stream=stream)
    progress.file_callback(10).relative_update(10)
    progress.file_done(10)
    progress.note("upload: a to b")
    progress.close()
    assert stream.getvalue() == ""
    assert capsys.readouterr().out == "upload: a to b\n"


def test_redraws_are_throttled_and_notes_go_above_the_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(200, 2, enabled=True, stream=stream, clock=clock)
    callback = progress.file_callback(100)
    callback.set_size(100)
    callback.relative_update(50)
    callback.relative_update(50)  # within REDRAW_S of the first draw: not drawn
    assert stream.getvalue().count("\r[") == 1
    clock.now += 2 * REDRAW_S
    callback.relative_update(100)  # a retried upload counts its bytes again: capped
    assert "100 B/200 B" in stream.getvalue().rsplit("\r[", 1)[-1]
    progress.file_done(100)
    before = len(stream.getvalue())
    progress.note("upload: a to b")  # the line is cleared, the note printed, the line redrawn
    assert stream.getvalue()[before:].startswith("\r\x1b[K\r[")
    clock.now += 1
    progress.file_callback(100).relative_update(100)
    progress.file_done(100)  # the last file is always drawn
    progress.close()
    assert stream.getvalue().rsplit("\r", 1)[-1].startswith(f"[{'#' * 30}] 100.0%  200 B/200 B")
    assert stream.getvalue().endswith("\n")
    assert capsys.readouterr().out == "upload: a to b\n"
