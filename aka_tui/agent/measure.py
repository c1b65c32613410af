"""The loop's evaluations of candidates, each timed in the run's wall-time budget (aka_tui/agent/budget.py).

A full evaluation is the hardened one. A quick one (a screening, or one evaluation of a re-measurement) runs
one case, no fuzzing, on the shapes that carry weight in S_op; a proposal is screened before its full
evaluation, and a candidate that looks better or close is re-measured interleaved with the incumbent before
it can be accepted.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from aka_tui.agent.attempt import Attempt, first_error, one_line
from aka_tui.agent.budget import WallBudget
from aka_tui.bench.evaluator.evaluate import (
    CandidateSpec,
    EvalOptions,
    evaluate_candidate,
    resolve_device,
    resolve_tier,
)
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import OpScore, score_op


def promising(screened: OpScore, incumbent: Attempt, close_rel: float) -> bool:
    """Worth a full evaluation: correct, real and not clearly slower than the incumbent."""
    return (screened.correct and screened.real
            and screened.s_op >= incumbent.score.s_op * (1.0 - close_rel))


@dataclass
class Measurer:
    """Evaluates one problem's candidates for a loop run; `emit` reports screenings and re-measurements."""

    problem: Problem
    profile: HardwareProfile
    options: EvalOptions
    work_dir: Path
    budget: WallBudget
    emit: Callable[..., None]

    def baseline_s_raw(self) -> float:
        """S_raw of the eager reference (a fallback, so its S is 0)."""
        with self.budget.timed("baseline"):
            baseline = evaluate_candidate(self.problem, CandidateSpec("eager"), self.options)
        return score_op(self.problem, baseline, self.profile).s_raw_op

    def target_compile_error(self, iteration: int, arch: int | None) -> str:
        """"" when the iteration's candidate (written by `full`) compiles for GPU architecture `arch` (or there is
        none to check), else one line saying why not."""
        from aka_tui.bench.evaluator.target_compile import compile_for_target

        if arch is None:
            return ""
        with self.budget.timed("target-compile"):
            result = compile_for_target(self.problem.directory, self.work_dir / f"candidate_{iteration:04d}.py", arch,
                                        sandbox=self.options.limits.sandbox)
        return "" if result.ok else f"does not compile for sm_{arch}: {result.error}"

    def full(self, source: str, iteration: int) -> tuple[OpScore, Any]:
        """The full evaluation of a candidate: its score and the evaluator's result."""
        path = self.work_dir / f"candidate_{iteration:04d}.py"
        path.write_text(source)
        with self.budget.timed("full"):
            result = evaluate_candidate(self.problem, CandidateSpec.file(path), self.options)
        return score_op(self.problem, result, self.profile), result

    def quick_options(self) -> EvalOptions:
        """One case, no fuzzing, only the shapes with weight in S_op (S_op is the same on them)."""
        tier = resolve_tier(self.options, resolve_device(self.options.device))
        shapes = self.problem.shapes_for(tier)
        if self.options.shape_ids:
            weighted = list(self.options.shape_ids)
        else:
            weighted = [s.shape_id for s in shapes if s.weight > 0] or [s.shape_id for s in shapes]
        return replace(self.options, cases=1, fuzz=0, shape_ids=weighted)

    def screen(self, source: str, iteration: int, incumbent: Attempt, close_rel: float
               ) -> tuple[bool, OpScore, Any]:
        """A quick evaluation of a candidate: whether it is promising, its score and the evaluator's result."""
        path = self.work_dir / f"screen_{iteration:04d}.py"
        path.write_text(source)
        with self.budget.timed("quick"):
            result = evaluate_candidate(self.problem, CandidateSpec.file(path), self.quick_options())
        score = score_op(self.problem, result, self.profile)
        is_promising = promising(score, incumbent, close_rel)
        self.emit("candidate_screened", iteration=iteration, s_op=score.s_op, correct=score.correct,
                  real=score.real, incumbent_s=incumbent.score.s_op, promising=is_promising,
                  why=one_line(first_error(result)))
        return is_promising, score, result

    def screen_batch(self, executor: Any, sources: Sequence[str], iteration: int, incumbent: Attempt,
                     close_rel: float) -> list[tuple[bool, OpScore, Any]]:
        """Quick evaluations of k candidates in parallel on the executor's slots (one GPU each), timed as one
        batch; one (promising, score, result) per source, in order."""
        from aka_tui.executors.base import EvalJob

        quick = self.quick_options()
        jobs = []
        for rank, source in enumerate(sources):
            path = self.work_dir / f"screen_{iteration:04d}_{rank}.py"
            path.write_text(source)
            jobs.append(EvalJob(str(rank), self.problem, CandidateSpec.file(path), quick))
        results: dict[int, Any] = {}
        assert executor is not None
        with self.budget.timed("batch"):
            for done in executor.run(jobs):
                results[int(done.job.key)] = done.result
        screens = []
        for rank in range(len(sources)):
            score = score_op(self.problem, results[rank], self.profile)
            screens.append((promising(score, incumbent, close_rel), score, results[rank]))
        return screens

    def remeasure(self, iteration: int, incumbent: Attempt, source: str, planned_rounds: int, noise_rel: float
                  ) -> tuple[bool, dict[str, Any]]:
        """Time incumbent and candidate alternately (I, C, I, C …) and accept only if the candidate's median
        S_op beats the incumbent's median by more than the noise margin `noise_rel`. A round starts only if
        it is predicted to fit in the wall-time budget; when none fits, the candidate is not accepted (the
        win is unverified). Returns the decision and its record (proposal.json's `remeasure`)."""
        quick = self.quick_options()
        paths = {"incumbent": self.work_dir / f"remeasure_{iteration:04d}_incumbent.py",
                 "candidate": self.work_dir / f"remeasure_{iteration:04d}_candidate.py"}
        paths["incumbent"].write_text(incumbent.proposal.source)
        paths["candidate"].write_text(source)
        samples: dict[str, list[float]] = {"incumbent": [], "candidate": []}
        reason = ""
        for _ in range(planned_rounds):
            fits, round_s, left_s = self.budget.round_fits()
            if not fits:
                reason = f"budget: a round predicted {round_s:.1f} s, {left_s:.1f} s left"
                break
            for label in ("incumbent", "candidate"):
                with self.budget.timed("quick"):
                    result = evaluate_candidate(self.problem, CandidateSpec.file(paths[label]), quick)
                samples[label].append(score_op(self.problem, result, self.profile).s_op)
        rounds = len(samples["candidate"])
        record: dict[str, Any] = {"rounds": rounds, "rounds_planned": planned_rounds, "samples": samples}
        if rounds == 0:
            reason = f"not re-measured: {reason}"
            self.emit("remeasure_skipped", iteration=iteration, rounds_planned=planned_rounds, reason=reason)
            return False, {**record, "accepted": False, "reason": reason}
        med = {k: statistics.median(v) for k, v in samples.items()}
        better = med["candidate"] > med["incumbent"] * (1.0 + noise_rel)
        self.emit("candidates_remeasured", iteration=iteration, samples=samples, accepted=better, rounds=rounds,
                  rounds_planned=planned_rounds, reason=reason)
        return better, {**record, "accepted": better, "reason": reason}
