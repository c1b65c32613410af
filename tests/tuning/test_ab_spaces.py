"""The flags of an A/B sweep: the varied tunables at their values, every other one pinned to its default."""

from __future__ import annotations

import pytest

from aka_tui.knowledge.reference_kernels import kernels_for_op
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.tuning import SweepError
from aka_tui.tuning.ab_spaces import ab_flags, main


def test_every_other_tunable_is_pinned_to_its_default() -> None:
    defaults = kernels_for_op(load_kb(default_kb_dir()), "rms_norm")[0].tunables
    varied = "num_warps"
    assert varied in defaults
    flags = ab_flags("rms_norm", [f"{varied}=4,8"])
    assert flags[::2] == ["--space"] * len(defaults)
    spaces = dict(item.split("=", 1) for item in flags[1::2])
    assert list(spaces) == list(defaults)
    assert spaces[varied] == "4,8"
    assert all(spaces[name] == str(value) for name, value in defaults.items() if name != varied)


def test_a_tunable_or_value_outside_the_search_space_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SweepError, match="NAME one of"):
        ab_flags("rms_norm", ["NOT_A_TUNABLE=1"])
    with pytest.raises(SweepError, match="not in SEARCH_SPACE"):
        ab_flags("rms_norm", ["num_warps=3"])
    assert main(["rms_norm", "num_warps=4,8"]) == 0
    assert "--space num_warps=4,8" in capsys.readouterr().out
