"""Where the offline loop starts on a problem: a person's kernel, the knowledge base's kernel for the
operator, a kernel transferred from the knowledge base by semantics, or a compiler seed; and one clear line
when none applies.

Order: a person's file (`--start`) wins; then a kernel whose entry declares the operator, used as it is only
when the probe shows it reproduces the problem under its own interface; then every reference kernel, matched
by probe runs (`transfer.py`); then inductor's Triton lowering of the reference (`seed_source.py`).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from aka_tui.errors import ProposerError
from aka_tui.knowledge.reference_kernels import ReferenceKernel


@dataclass
class StartingPoint:
    """The kernel the offline proposer tunes, which path produced it, and what was tried before it."""

    kernel: ReferenceKernel
    path: str  # kb | transfer | compiler-seed | person
    detail: str
    tried: list[str] = field(default_factory=list)


def person_kernel(source: str, origin_path: Path, family: str = "") -> ReferenceKernel:
    """A person's kernel (pasted, edited or a file) as a tunable kernel: it must declare TUNABLES and
    SEARCH_SPACE; KbEntryError naming what is missing otherwise. The one call the app needs."""
    from aka_tui.knowledge.reference_kernels import kernel_from_source

    return kernel_from_source(source, origin_path, f"person:{origin_path.name}", "person", family)


def _same_interface(problem_model: Any, kernel_model: Any) -> bool:
    def names(fn: Any) -> list[str]:
        return [p for p in inspect.signature(fn).parameters if p != "self"]

    return (names(problem_model.__init__) == names(kernel_model.__init__)
            and names(problem_model.forward) == names(kernel_model.forward))


def _is_identity(match: Any) -> bool:
    """True when a match needs no adapter: every argument goes through under its own name, in order, and none
    needs a copy."""
    args_ok = all(spec in (["input", name], ["default"]) for name, spec in match.arg_map.items())
    init_ok = all(spec in (["init", name], ["default"]) for name, spec in match.init_map.items())
    outputs_ok = match.out_map == [[i] for i in range(len(match.out_map))]
    return args_ok and init_ok and outputs_ok and match.kb_structure == match.structure and not match.copied


def _probes_on(problem: Any, device: str) -> list[Any]:
    """Probe inputs and reference outputs on `device`; ProposerError (one line) when the reference fails there."""
    from aka_tui.agent.probe import make_probes

    try:
        return make_probes(problem, device)
    except Exception as exc:  # the reference itself does not run: nothing to match or lower
        first = str(exc).splitlines()[0][:160] if str(exc) else ""
        raise ProposerError(f"{problem.name}: its reference does not run on probe inputs on {device} "
                            f"({type(exc).__name__}: {first}); the reference must run here before the agent "
                            "can start") from None


def _probe_device(probes: list[Any]) -> str:
    for probe in probes:
        for value in probe.inputs.values():
            if hasattr(value, "device"):
                return str(value.device.type)
    return "cpu"


def matching_probes(problem: Any, device: str) -> list[Any]:
    """Probes for the semantic match: on the CPU whenever the reference runs there. The match runs knowledge-base
    semantics under trial argument mappings; a wrong mapping's out-of-range index is an ordinary exception on the
    CPU, but on CUDA a device-side assert that ends the process's CUDA context (and every later step with it).
    The probe shapes are the problem's smallest, so the CPU is fast enough; the device is used only when the
    reference needs it (e.g. a device-only dtype or library call)."""
    if device != "cpu":
        try:
            return _probes_on(problem, "cpu")
        except ProposerError:
            pass
    return _probes_on(problem, device)


def _check_device_alive(probes: list[Any]) -> None:
    """After trial mappings ran on CUDA probes: one line, not a traceback later, when one of them ended the
    CUDA context."""
    if _probe_device(probes) != "cuda":
        return
    import torch

    try:
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - any CUDA error here ends the context
        raise ProposerError("a trial argument mapping of the knowledge-base search ended this process's CUDA "
                            f"context ({type(exc).__name__}: {str(exc).splitlines()[0][:120]}); the reference "
                            "does not run on the CPU, so the search had to probe on CUDA. Start from a kernel "
                            "with `aka optimize --start FILE`, or add a reference kernel for this computation "
                            "in kb/family/") from None


WRITTEN_IN_APP = "a person's kernel written in the app"  # the path of a session started from one


def find_starting_point(problem: Any, device: str, tier: str | None, kb_dir: Path | None = None,
                        start_file: Path | None = None, log: Callable[[str], None] = print,
                        allow_seed: bool = True, transfer_budget_s: float = 60.0,
                        start_text: str | None = None) -> StartingPoint:
    """The first path that applies; ProposerError with one line naming what would help when none does.
    `start_text`: a person's kernel written in the app (as `start_file` is one on disk)."""
    from aka_tui.agent.probe import gives_the_same_outputs_again, load_modules, reference_tensors
    from aka_tui.knowledge.reference_kernels import reference_kernels
    from aka_tui.knowledge.store import default_kb_dir, load_kb

    if start_text is not None:
        kernel = person_kernel(start_text, Path("your-kernel.py"), problem.family)
        return StartingPoint(kernel, "person", WRITTEN_IN_APP)
    if start_file is not None:
        if not start_file.is_file():
            raise ProposerError(f"--start {start_file}: no such file")
        try:
            source = start_file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ProposerError(f"--start {start_file}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise ProposerError(f"--start {start_file}: cannot be read: {exc.strerror}") from None
        kernel = person_kernel(source, start_file, problem.family)
        return StartingPoint(kernel, "person", f"a person's kernel {start_file.name}")
    reference, _ = load_modules(problem)
    kernels = reference_kernels(load_kb(kb_dir or default_kb_dir()))
    probes = matching_probes(problem, device)
    tried: list[str] = []
    held, tables = reference_tensors(reference.Model, problem)
    if tables:  # no candidate is given them: the compiler seed builds them with the reference's code
        tried.append(f"its reference computes buffers at init that are not in its state dict ({_listed(tables)}), "
                     "which no knowledge-base transfer builds")
        log(f"the reference builds tables at init outside its state dict ({_listed(tables)}): no knowledge-base "
            "transfer")
    elif held:  # an adapter declares no parameters; the compiler seed keeps the reference's state dict
        tried.append(f"its reference Model holds parameters or buffers ({_listed(held)}), which no "
                     "knowledge-base transfer takes")
        log(f"the reference holds parameters or buffers ({_listed(held)}): no knowledge-base transfer")
    if not held and not tables:
        point = _from_the_kb(problem, reference, kernels, probes, transfer_budget_s, tried, log)
        if point is not None:
            return point
    if allow_seed:
        from aka_tui.agent.seed_source import build_seed
        from aka_tui.knowledge.reference_kernels import kernel_from_source

        log(("" if held or tables else "no knowledge-base kernel matches; ")
            + "lowering the reference with torch.compile (inductor) to Triton")
        seed_probes = probes if _probe_device(probes) == device else _probes_on(problem, device)
        seed = build_seed(problem, seed_probes, tier, device)
        if seed.source is not None:
            log(seed.reason)
            kernel = kernel_from_source(seed.source, problem.reference_path, "compiler-seed", "compiler-seed",
                                        problem.family)
            return StartingPoint(kernel, "compiler-seed", seed.reason, tried)
        tried.append(seed.reason)
    if probes and not gives_the_same_outputs_again(problem, reference, probes[0]):
        raise ProposerError(f"no starting kernel for {problem.name}: its reference returns other outputs when run "
                            "again on the same inputs (random draws in its forward?), so no kernel can be checked "
                            "against it. What would help: a reference that takes its random numbers as inputs "
                            "(drawn in its input file)")
    raise ProposerError(f"no starting kernel for {problem.name}: " + "; ".join(tried)
                        + ". What would help: a reference kernel for this computation in kb/family/ (TUNABLES / "
                        "SEARCH_SPACE), a kernel of yours with `aka optimize --start FILE`, or `--proposer "
                        "anthropic` with ANTHROPIC_API_KEY set")


def _listed(names: list[str]) -> str:
    return ", ".join(names[:4]) + (", …" if len(names) > 4 else "")


def _from_the_kb(problem: Any, reference: Any, kernels: list[ReferenceKernel], probes: list[Any],
                 transfer_budget_s: float, tried: list[str], log: Callable[[str], None]) -> StartingPoint | None:
    """The knowledge base's own kernel for the operator, else the best transfer; None (and why, in `tried`)."""
    from aka_tui.agent.adapter import adapter_source, transferred_kernel
    from aka_tui.agent.transfer import find_transfers, kb_semantics, match_kernel
    from aka_tui.agent.transfer_check import adapted_kernel_fails
    from aka_tui.bench.problem.lookup import default_suite_dir

    suite_dir = default_suite_dir()
    for kernel in (k for k in kernels if problem.name in k.ops):  # an entry that declares this operator
        semantics = kb_semantics(kernel, suite_dir)
        if semantics is None or not _same_interface(reference.Model, semantics.model_class):
            continue
        match = match_kernel(problem, probes, semantics, time.monotonic() + 60.0)
        if match is not None and _is_identity(match):
            return StartingPoint(kernel, "kb", f"the knowledge base's {kernel.entry_id}")

    def runs(match: Any) -> str | None:  # the adapted kernel itself on the small probes (transfer_check.py)
        return adapted_kernel_fails(problem, adapter_source(match, reference.Model), probes)

    passed_over: list[str] = []
    matches = find_transfers(problem, kernels, probes, suite_dir, budget_s=transfer_budget_s, accept=runs,
                             passed_over=passed_over)
    _check_device_alive(probes)
    for line in passed_over:
        log(f"transfer passed over: {line}")
    if matches:
        match = matches[0]
        log(match.rationale)  # "transfer from the knowledge base's <kernel>: ..."
        return StartingPoint(transferred_kernel(match, reference.Model), "transfer",
                             f"transfer from {match.kernel.entry_id}", tried)
    tried.append(f"no knowledge-base kernel reproduces its outputs ({len(kernels)} tried on "
                 f"{len(probes)} probe shapes" + "".join(f"; {line}" for line in passed_over) + ")")
    return None
