"""The trials of one op's sweep and what they say: the best configuration per shape, the one recommended
TUNABLES over all swept shapes, and the warnings the recorded launches give.

The best trial of a shape is its fastest passing one when it beats the default beyond the measured spread
(`trials.better`), else the default. The recommendation is the configuration (the default or a shape's best)
with the best weighted geometric-mean speed-up over the default on every swept shape; it stays the default
unless that gain exceeds `MIN_GAIN`.
"""

from __future__ import annotations

from typing import Any

from aka_tui.bench.measure.verdicts import PASSED
from aka_tui.bench.problem.model import RooflineEntry, Shape
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import HardwareProfile
from aka_tui.bench.scoring.score import weighted_geomean
from aka_tui.knowledge.reference_kernels import ReferenceKernel
from aka_tui.tuning import describe_changes
from aka_tui.tuning.trials import FAILED_STATUSES, MIN_GAIN, Trial, better, changes, config_key


class TrialLog:
    """Every trial of one op in the order it was run (or replayed), and each by (configuration, shape)."""

    def __init__(self, default: dict[str, Any]) -> None:
        self.default = default
        self.trials: list[Trial] = []
        self.by_key: dict[tuple[str, str], Trial] = {}

    def add(self, trial: Trial) -> None:
        self.trials.append(trial)
        self.by_key[(config_key(trial.config), trial.shape_id)] = trial

    def get(self, config: dict[str, Any], shape_id: str) -> Trial | None:
        return self.by_key.get((config_key(config), shape_id))

    def shape_trials(self, shape_id: str) -> list[Trial]:
        return [t for t in self.trials if t.shape_id == shape_id]

    def best_of(self, shape_id: str) -> tuple[Trial | None, Trial | None]:
        """(default trial, best trial): the fastest passing one when it beats the default beyond the spread."""
        default = self.get(self.default, shape_id)
        passing = [t for t in self.shape_trials(shape_id) if t.ok]
        if not passing:
            return default, None
        fastest = min(passing, key=lambda t: t.median_ms)  # type: ignore[arg-type, return-value]
        if default is not None and default.ok and not better(fastest, default):
            return default, default
        return default, fastest

    def recommendation(self, shapes: list[Shape]) -> dict[str, Any] | None:
        """The configuration with the best weighted geomean speed-up over the default on every shape."""
        defaults = {s.shape_id: self.get(self.default, s.shape_id) for s in shapes}
        if not all(t is not None and t.ok for t in defaults.values()):
            return None
        candidates: list[dict[str, Any]] = [dict(self.default)]
        for shape in shapes:
            _, best = self.best_of(shape.shape_id)
            if best is not None and best.config not in candidates:
                candidates.append(best.config)
        scored = []
        for config in candidates:
            per_shape: dict[str, float] = {}
            for shape in shapes:
                trial = self.get(config, shape.shape_id)
                if trial is None or not trial.ok:
                    break
                per_shape[shape.shape_id] = defaults[shape.shape_id].median_ms / trial.median_ms  # type: ignore[union-attr, operator]
            else:
                gain = weighted_geomean([(s.weight, per_shape[s.shape_id]) for s in shapes])
                if gain is not None:
                    scored.append((gain, config, per_shape))
        if not scored:
            return None
        gain, config, per_shape = max(scored, key=lambda item: item[0])
        if gain <= 1.0 + MIN_GAIN:
            gain, config = 1.0, dict(self.default)
            per_shape = {s.shape_id: 1.0 for s in shapes}
        return {"config": config, "changed": changes(config, self.default), "weighted_speedup": gain,
                "per_shape_speedup": per_shape,
                "basis": "weighted geomean over the swept shapes" if any(s.weight > 0 for s in shapes)
                else "geomean over the swept shapes (none carries weight)"}

    def launch_warnings(self, shapes: list[Shape], kernel: ReferenceKernel) -> list[str]:
        """When TUNABLES seem not to reach the launch, or when the kernel's INERT rules are contradicted."""
        warnings: list[str] = []
        canonical = getattr(kernel, "canonical", None)  # INERT rules (kernels may declare none)
        for shape in shapes:
            timed = [t for t in self.shape_trials(shape.shape_id) if t.launch]
            configs = {config_key(t.config) for t in timed}
            if len(configs) >= 3 and len({t.launch for t in timed}) == 1:
                warnings.append(f"{shape.shape_id}: {len(configs)} configurations all launched the same "
                                "kernels with the same arguments: TUNABLES may not reach the launch")
            if canonical is None or not getattr(kernel, "inert", None):
                continue
            seen: dict[str, Trial] = {}
            for trial in timed:
                first = seen.setdefault(config_key(canonical(trial.config)), trial)
                if first.launch != trial.launch:
                    warnings.append(
                        f"{shape.shape_id}: #{first.index} and #{trial.index} differ only in tunables INERT declares "
                        f"inert ({describe_changes(changes(trial.config, first.config))}) but launch differently")
        return warnings

    def shape_summary(self, shape: Shape, roofline: RooflineEntry | None, profile: HardwareProfile,
                      stop_reason: str) -> dict[str, Any]:
        """One shape's entry in the op's record: its roofline, its default and best trial, its counts."""
        default, best = self.best_of(shape.shape_id)
        rb = bound(roofline, profile) if roofline else None
        trials = self.shape_trials(shape.shape_id)
        return {
            "shape_id": shape.shape_id, "tier": shape.tier, "weight": shape.weight,
            "bytes": roofline.bytes_total if roofline else None, "flops": roofline.flops if roofline else None,
            "path": roofline.path if roofline else None, "bound": rb.bottleneck if rb else None,
            "t_sol_ms": rb.t_sol_s * 1e3 if rb else None,
            "default_index": default.index if default else None, "best_index": best.index if best else None,
            "speedup": (default.median_ms / best.median_ms) if default and best and default.ok and best.ok else None,  # type: ignore[operator]
            "stop_reason": stop_reason,
            "counts": {"trials": len(trials), "passed": sum(t.status == PASSED for t in trials),
                       "duplicate": sum(t.status == "duplicate" for t in trials),
                       "failed": sum(t.status in FAILED_STATUSES for t in trials)},
        }
