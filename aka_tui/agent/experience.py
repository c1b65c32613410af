"""A win measured in a session becomes a *proposed* experience entry, for a person to accept, edit or reject."""

from __future__ import annotations

import time
from pathlib import Path

from aka_tui.agent.attempt import LoopOutcome
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.knowledge.entry import KbEntry, Worth
from aka_tui.knowledge.store import KnowledgeBase, write_entry

MIN_GAIN = 1.05  # below a 5% gain over the session's first real kernel there is nothing worth teaching


def propose_experience(kb: KnowledgeBase, problem: Problem, outcome: LoopOutcome, profile: HardwareProfile,
                       session_name: str, tier: str) -> Path | None:
    """Write kb/pending/exp-<op>-<session>.md when the session improved S_op measurably on a real GPU."""
    if not profile.representative:
        return None  # interpreter timings teach nothing about GPUs
    accepted = [a for a in outcome.attempts if a.accepted]
    if len(accepted) < 2 or accepted[0].score.s_op <= 0:
        return None
    first, best = accepted[0], accepted[-1]
    gain = best.score.s_op / first.score.s_op
    if gain < MIN_GAIN:
        return None
    steps = [f"- iteration {a.iteration}: {a.proposal.rationale} → S_op {a.score.s_op:.3f}" for a in accepted[1:]]
    changed = sorted({k for a in accepted[1:] for k in a.proposal.changed})
    entry_id = f"exp-{problem.name.replace('_', '-')}-{session_name.lower()}"[:80].rstrip("-")
    body = "\n".join([
        f"Measured in session `{session_name}` on {profile.display_name}, {tier} tier: S_op rose from "
        f"{first.score.s_op:.3f} (iteration {first.iteration}, {first.proposal.kernel_id}) to {best.score.s_op:.3f} "
        f"(iteration {best.iteration}), a {gain:.2f}x gain, through these accepted steps:", "", *steps, "",
        f"Final tunables: {best.proposal.point or '(model-written kernel)'}.",
        "Proposed automatically by the agent; a person checks that the gain is not noise before accepting it.",
    ])
    entry = KbEntry(
        id=entry_id, layer="experience", kind="technique",
        title=f"{problem.name} on {profile.name}: {', '.join(changed) or 'revision'} raised S_op {gain:.2f}x",
        body=body, path=Path(f"{entry_id}.md"), status="proposed",
        signals=(), triggers=(f"{problem.name} below its roofline on {profile.name}",),
        scope={"vendor": (profile.vendor,), "arch": (profile.arch,), "dsl": ("triton",), "family": (problem.family,),
               "ops": (problem.name,)},
        worth=Worth(round(gain, 3), f"{profile.name}, {problem.name} {tier}, {time.strftime('%Y-%m-%d')}", "measured"),
    )
    return write_entry(kb, entry, pending=True)
