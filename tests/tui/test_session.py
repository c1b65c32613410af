"""Session screen on the CPU interpreter: iterations stream in, accept tags and exports, an edit is recorded as
the person's commit and the agent continues from it, a crashing candidate leaves the app running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aka_tui.agent.offline import Proposal
from tests.tui.conftest import SIZE, wait_for, wait_loaded

FAST = {"use_kb": False, "fuzz": 0, "cases": 1, "tier": "smoke", "remeasure_rounds": 0}


async def _start(pilot: Any, problem: str) -> Any:
    await wait_loaded(pilot)
    pilot.app.open_session(problem)
    await pilot.pause()
    await pilot.press("s")
    return pilot.app.screen


@pytest.mark.slow
@pytest.mark.asyncio
async def test_live_session_accept_export_and_edit(make_app: Any, tmp_path: Path) -> None:
    app = make_app(iterations=1, author_name="Ada Kernel", author_email="ada@example.invalid")
    app.session_overrides = dict(FAST)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot, "silu_and_mul")
        await wait_for(pilot, lambda: len(screen.views) == 1 and not screen.runner.running)
        view = screen.views[0]
        assert view.correct and view.real and view.accepted and view.shapes
        assert "S_op" in str(screen.query_one("#metrics").content.renderables[0])

        export = tmp_path / "exported" / "silu.py"
        await pilot.press("a")  # accept: tag, then the export prompt
        await pilot.pause()
        prompt = app.screen.query_one("#path-input")
        prompt.value = str(export)
        await pilot.press("enter")
        await pilot.pause()
        assert "does not exist. Create it" in str(app.screen.query_one("Label").content)  # asked, not silent
        await pilot.press("y")
        await pilot.pause()
        text = export.read_text()
        assert text.startswith("# aka-tui candidate for problem silu_and_mul") and text.endswith(view.kernel)
        assert "iteration 1 (accepted, tag silu_and_mul-accepted-0001)" in text  # the CLI's provenance header
        session = screen.runner.session
        assert "silu_and_mul-accepted-0001" in [t.name for t in session.repo.tags]

        await pilot.press("e")  # edit: the in-app editor
        await pilot.pause()
        area = app.screen.query_one("#editor-area")
        area.text = "# tuned by hand\n" + view.kernel
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: len(screen.views) >= 2 and screen.views[1].author == "Ada Kernel")
        edited = screen.views[1]
        assert edited.kernel.startswith("# tuned by hand") and edited.correct and edited.accepted
        await wait_for(pilot, lambda: not screen.runner.running)
        assert len(screen.views) == 3  # the agent continued from the edit for one more iteration
        assert screen.views[2].kernel.startswith("# tuned by hand")  # tuning the edit, not the kernel before it
        assert screen.views[2].path == "person Ada Kernel"
        commits = session.candidates()
        assert [c.author for c in commits] == ["aka agent", "Ada Kernel", "aka agent"]
        assert session.iteration_files(3)["proposal"]["proposer"] == "offline"


class CrashingProposer:
    """Proposes a kernel that segfaults in forward."""

    name = "offline"

    def tactics(self) -> list[str]:
        return []

    def first(self) -> Proposal:
        source = ("import ctypes\nfrom torch import nn\n\nclass Model(nn.Module):\n"
                  "    def __init__(self, **kwargs):\n        super().__init__()\n\n"
                  "    def forward(self, **inputs):\n        return ctypes.string_at(0)\n")
        return Proposal(source, "crash", {}, {}, "a kernel that segfaults")

    def propose(self, *args: Any, **kwargs: Any) -> Proposal:
        return self.first()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_crashing_candidate_leaves_the_app_running(make_app: Any) -> None:
    app = make_app(iterations=1)
    app.session_overrides = dict(FAST)
    app.proposer_factory = lambda settings, problem, profile: CrashingProposer()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot, "silu_and_mul")
        await wait_for(pilot, lambda: len(screen.views) == 1 and not screen.runner.running)
        view = screen.views[0]
        assert not view.correct and view.verdict == "incorrect"
        assert view.shapes and view.shapes[0].status in ("crashed", "runtime_error")
        assert app.is_running
        await pilot.press("a")  # accepting an incorrect candidate is refused with a message
        await pilot.pause()
        assert not list(screen.runner.session.repo.tags)


@pytest.mark.asyncio
async def test_a_bad_proposer_is_a_message_not_a_crash(make_app: Any) -> None:
    from aka_tui.errors import ProposerError

    def no_key(settings: Any, problem: Any, profile: Any) -> Any:
        raise ProposerError("ANTHROPIC_API_KEY is not set")

    app = make_app(iterations=1)
    app.session_overrides = dict(FAST)
    app.proposer_factory = no_key
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot, "silu_and_mul")
        await wait_for(pilot, lambda: screen.runner is not None and not screen.runner.running)
        await pilot.pause()
        assert app.is_running
        log = " ".join(str(line.text).strip() for line in screen.query_one("#agent-log").lines)
        assert "ANTHROPIC_API_KEY is not set" in log
        assert screen.runner.phase == "error" and "error: proposer error" in str(screen.query_one("#session-status").content)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_session_on_an_operator_without_a_kb_kernel_starts_from_a_transfer(app_paths: Any, make_app: Any,
                                                                                    tmp_path: Path) -> None:
    """The app searches the starting point as `aka optimize` does: an RMSNorm behind another interface, which no
    knowledge-base kernel declares, starts from the transferred norm kernel, and the path shows in the metrics,
    the decision tab and the log."""
    import shutil

    from tests.agent.optimize_runs import UNSEEN

    shutil.copytree(UNSEEN / "scaled_hidden_norm", tmp_path / "suite" / "scaled_hidden_norm")
    app_paths.suite_dir = tmp_path / "suite"
    app = make_app(iterations=1)
    app.session_overrides = dict(FAST)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot, "scaled_hidden_norm")
        await wait_for(pilot, lambda: len(screen.views) == 1 and not screen.runner.running, timeout_s=240.0)
        view = screen.views[0]
        assert view.correct and view.real and view.accepted
        assert view.path == "transfer from rms-norm-reference-kernel"
        assert "via transfer from rms-norm-reference-kernel" in str(screen.query_one("#metrics").content.renderables[0])
        log = " ".join(str(line.text).strip() for line in screen.query_one("#agent-log").lines)
        assert "starting point: transfer from rms-norm-reference-kernel" in log, log


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_kernel_written_before_the_session_is_its_start(make_app: Any) -> None:
    """e before any session opens the editor on a template (the tunables to declare, then the reference); a kernel
    without TUNABLES is refused with the reason and stays in the editor; saved with them, it starts the session and
    the offline agent tunes it."""
    from aka_tui.knowledge.reference_kernels import kernels_for_op
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    mine = "# written by hand\n" + kernels_for_op(load_kb(default_kb_dir()), "silu_and_mul")[0].source
    app = make_app(iterations=2)
    app.session_overrides = dict(FAST)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.open_session("silu_and_mul")
        await pilot.pause()
        screen = app.screen
        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one("#editor-area")
        assert "TUNABLES = " in area.text and "class Model" in area.text  # the template
        area.text = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen.query_one("#editor-area") is not None and screen.runner is None  # refused, kept
        app.screen.query_one("#editor-area").text = mine
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen.runner is not None and len(screen.views) == 2
                       and not screen.runner.running, timeout_s=240.0)
        first, second = screen.views
        assert first.kernel.startswith("# written by hand") and first.path == "a person's kernel written in the app"
        assert second.kernel.startswith("# written by hand")  # the agent tuned the person's kernel
        from dataclasses import replace

        from aka_tui.tui.agent_runner import AgentRunner
        from aka_tui.tui.session_resume import open_recorded

        again = AgentRunner(replace(screen.runner.settings, start_text=None), lambda event: None)
        open_recorded(again, screen.runner.session.path, force=True)  # continued later: from the same kernel
        assert again.settings.start_text is not None and again.settings.start_text.startswith("# written by hand")
