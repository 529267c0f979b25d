"""A status as a dict and back: every field, nothing else, the same status again."""

from dataclasses import fields

import pytest

from ufs.status import UfsStatus, dir_status, file_status


@pytest.mark.parametrize(
    "status",
    [
        file_status("s3://b/k", 10, 1_700_000_000_123_456_789, '"etag"'),
        file_status("file:///data/x", 0, 5),
        dir_status("s3://b/d", "d"),
    ],
)
def test_a_status_round_trips_through_its_dict_with_every_field(status: UfsStatus) -> None:
    data = status.to_dict()
    assert list(data) == [f.name for f in fields(UfsStatus)]
    assert UfsStatus.from_dict(data) == status
