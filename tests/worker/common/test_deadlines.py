"""The ``X-Dora-Timeout-Ms`` header: what a client sends and what a worker makes of it."""

import re

import pytest

from worker.common import errors as catalogue
from worker.common.deadlines import header_value, request_deadline


class FakeClock:
    now = 50.0

    def __call__(self) -> float:
        return self.now


def test_the_header_is_the_time_left_in_milliseconds() -> None:
    clock = FakeClock()
    deadline = request_deadline("2500", clock)
    assert deadline is not None
    assert deadline.seconds == 2.5
    clock.now += 2.0
    assert deadline.left() == pytest.approx(0.5)


def test_no_header_is_no_deadline_and_zero_is_one_already_spent() -> None:
    assert request_deadline(None) is None
    spent = request_deadline(" 0 ", FakeClock())  # as a header may arrive, padded
    assert spent is not None and spent.left() == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "X-Dora-Timeout-Ms is empty"),
        ("-5", "X-Dora-Timeout-Ms: -5 is negative"),
        ("1.5", "X-Dora-Timeout-Ms: '1.5' is not a whole number of milliseconds"),
        ("30s", "X-Dora-Timeout-Ms: '30s' is not a whole number"),
        ("+30", "X-Dora-Timeout-Ms: '+30' is not a whole number"),
        ("\u0661\u0662", "is not a whole number"),  # Arabic-Indic digits: isdigit, not ASCII
        ("123456789", "X-Dora-Timeout-Ms: 123456789 has more than 8 digits (at most 99999999 ms)"),
    ],
)
def test_a_malformed_header_is_a_bad_request_naming_it(value: str, says: str) -> None:
    with pytest.raises(catalogue.InvalidRequest, match=re.escape(says)) as raised:
        request_deadline(value)
    kind = catalogue.kind_of(raised.value)
    assert kind is not None and (kind.status, kind.code) == (400, "BadRequest")


@pytest.mark.parametrize(
    ("timeout_s", "sent"),
    [(60.0, "59000"), (5.0, "4500"), (0.2, "180"), (1e9, "99999999")],
)
def test_a_client_sends_its_timeout_less_the_answer_s_way_back(timeout_s: float, sent: str) -> None:
    assert header_value(timeout_s) == sent
    assert request_deadline(sent) is not None  # what a client sends, a worker takes
