"""The proposer registry: one list of names and one default model for the CLI and the app, one-line errors."""

from __future__ import annotations

import pytest

from aka_tui.agent.proposers import DEFAULT_MODEL, PROPOSER_NAMES, ProposerRequest, make_proposer
from aka_tui.bench.problem.lookup import find_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.errors import ProposerError


def test_cli_and_app_offer_the_registry_names_and_model() -> None:
    from aka_tui.cli import build_parser
    from aka_tui.tui.config import TuiConfig

    parser = build_parser()
    assert parser.parse_args(["optimize", "rms_norm"]).proposer == "offline"
    for name in PROPOSER_NAMES:
        assert parser.parse_args(["optimize", "rms_norm", "--proposer", name]).proposer == name
    with pytest.raises(SystemExit):
        parser.parse_args(["optimize", "rms_norm", "--proposer", "oracle"])
    assert TuiConfig().model == DEFAULT_MODEL and TuiConfig().proposer == "offline"
    assert TuiConfig(proposer="oracle").field_problems()["proposer"] == "proposer must be one of offline, anthropic, replay"


def test_unknown_kind_and_missing_recording_are_one_line() -> None:
    problem = find_problem("rms_norm")
    with pytest.raises(ProposerError, match="unknown proposer 'oracle': choose one of offline, anthropic, replay"):
        make_proposer(ProposerRequest("oracle", problem, get_profile("cpu")))
    with pytest.raises(ProposerError, match="^pick a recording$"):
        make_proposer(ProposerRequest("replay", problem, get_profile("cpu"), replay_missing="pick a recording"))


def test_offline_from_the_knowledge_base_kernel() -> None:
    proposer = make_proposer(ProposerRequest("offline", find_problem("rms_norm"), get_profile("cpu"), seed=3))
    assert proposer.name == "offline" and proposer.first().point
    assert proposer.path == "kb rms-norm-reference-kernel"  # the operator's own kernel is the first path
