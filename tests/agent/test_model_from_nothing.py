"""The Anthropic proposer on a problem the knowledge base has no kernel for: its first request carries the
reference and the closest knowledge-base kernel as an example, and the recorded answer is evaluated and
recorded with its path. Recorded response through the SDK's HTTP layer (mock transport); no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

from aka_tui.agent.anthropic_proposer import AnthropicProposer, make_client
from aka_tui.agent.brief import closest_kernel, example_section, problem_brief
from aka_tui.agent.loop import AgentLoop, LoopConfig
from aka_tui.bench.evaluator.evaluate import EvalOptions
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.record.session_repo import SessionRepo

DATA = Path(__file__).resolve().parents[1] / "data"
KEY = "sk-ant-api03-TESTKEYTESTKEYTESTKEY0123456789"


def test_model_starts_from_the_reference_and_the_closest_kernel(tmp_path: Path) -> None:
    problem = load_problem(DATA / "unseen" / "scaled_hidden_norm")
    profile = get_profile("cpu")
    example = closest_kernel(problem, reference_kernels(load_kb(default_kb_dir())))
    assert example is not None and example.family == "norm"  # nearest by family tag and arity, not by name
    recorded = json.loads((DATA / "recorded" / "anthropic_unseen_norm_first.json").read_text())
    requests: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=recorded)

    client = make_client(api_key=KEY, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    proposer = AnthropicProposer(problem_brief(problem, profile, "smoke") + example_section(problem, example),
                                 client=client)
    session = SessionRepo.create(tmp_path / "session", {"problem": problem.name, "proposer": "anthropic"})
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=1)
    loop = AgentLoop(problem, proposer, profile, options, LoopConfig(iterations=1, remeasure_rounds=0, baseline=False),
                     tmp_path / "work", session)
    outcome = loop.run()
    system = "\n".join(block["text"] for block in requests[0]["system"])
    assert "hidden_states" in system and "variance_epsilon" in system  # the reference itself
    assert f"Closest knowledge-base kernel: {example.entry_id}" in system and "TUNABLES" in system
    attempt = outcome.attempts[0]
    assert attempt.score.correct and attempt.score.real and attempt.accepted, attempt.error
    proposal = json.loads((session.path / "iterations" / "0001" / "proposal.json").read_text())
    assert proposal["path"] == "model claude-sonnet-5-5" and proposal["proposer"] == "anthropic"
    assert KEY not in json.dumps(proposal)
