"""The chart, loaded once per module by the real Helm SDK, for every chart test."""

from __future__ import annotations

from collections.abc import Iterator

import helm_python as helm
import pytest

from tests.helm.test_chart import CHART


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded
