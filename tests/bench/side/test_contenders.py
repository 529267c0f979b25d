"""Client speed-ups are found by their constructor option: a contender needing one the client
lacks is not built; the plain dora contender turns every built one off."""

import pytest

from bench.side import contenders
from bench.side.contenders import ClientFeature, Contender
from bench.side.handles import DoraHandle
from bench.side.services import SceneInfo

INFO = SceneInfo("http://127.0.0.1:9", "127.0.0.1:9", "bench", "/nonexistent", "/nonexistent")
# An option the client has today stands in for a speed-up that is built.
BUILT = ClientFeature("fallback", "fallback_to_ufs")
ABSENT = ClientFeature("teleport", "teleport")


def test_a_contender_needing_an_absent_option_is_not_built() -> None:
    contender = Contender(
        "dora + teleport", "dora", contenders.READS, True, contenders._dora(ABSENT)
    )
    assert contender.missing() == ("n/a (not built): DoraFileSystem has no teleport= option")
    assert Contender("plain", "dora", contenders.READS, True, contenders._dora()).missing() is None


@pytest.mark.parametrize(("enable", "expected"), [((), False), ((BUILT,), True)])
def test_built_features_are_passed_on_or_off(
    monkeypatch: pytest.MonkeyPatch, enable: tuple[ClientFeature, ...], expected: bool
) -> None:
    monkeypatch.setattr(contenders, "FEATURES", (BUILT, ABSENT))
    handle = contenders._dora(*enable)(INFO, "t")
    assert isinstance(handle, DoraHandle)
    assert handle.fs.options.fallback_to_ufs is expected
    handle.close()
