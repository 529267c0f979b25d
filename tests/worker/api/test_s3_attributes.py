"""Objects' attributes on the S3 endpoint: what a request asks to keep, and the memo that
spares a warm read the store's HEAD."""

from ufs.attributes import Attributes
from ufs.status import file_status
from worker.api.s3.attributes import AttributeMemo, requested


def test_a_request_keeps_its_kept_headers_and_user_metadata() -> None:
    asked = requested({"content-type": "text/csv", "X-Amz-Meta-Run": "7", "host": "h",
                       "content-encoding": "gzip, aws-chunked", "x-amz-date": "d"})  # fmt: skip
    assert asked == Attributes({"Content-Type": "text/csv", "Content-Encoding": "gzip"},
                               {"run": "7"})  # fmt: skip
    assert asked.to_headers() == {"Content-Type": "text/csv", "Content-Encoding": "gzip",
                                  "x-amz-meta-run": "7"}  # fmt: skip
    assert not requested({"content-encoding": "aws-chunked"})


def test_the_memo_asks_once_per_version_and_forgets_on_write() -> None:
    memo, asked = AttributeMemo(entries=2), []

    def load(value: str) -> Attributes:
        asked.append(value)
        return Attributes({"Content-Type": value})

    first = file_status("s3://b/k", 1, 10, "e1")
    assert memo.get(first, lambda: load("a")).headers["Content-Type"] == "a"
    assert memo.get(first, lambda: load("b")).headers["Content-Type"] == "a"
    assert memo.get(file_status("s3://b/k", 1, 11, "e1"), lambda: load("c")).headers == {
        "Content-Type": "c"
    }
    assert memo.get(file_status("s3://b/k", 1, 11, "e2"), lambda: load("d")).headers == {
        "Content-Type": "d"
    }
    memo.forget("s3://b/k")
    memo.get(file_status("s3://b/k", 1, 11, "e2"), lambda: load("e"))
    for name in ("s3://b/x", "s3://b/y"):  # two more push the first out
        memo.get(file_status(name, 1, 1, "e"), lambda: load("f"))
    memo.get(file_status("s3://b/k", 1, 11, "e2"), lambda: load("g"))
    assert asked == ["a", "c", "d", "e", "f", "f", "g"]
