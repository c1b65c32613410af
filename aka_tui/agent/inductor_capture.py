"""Lower a problem's reference with torch.compile (inductor) to Triton and capture the generated module's
source, without compiling or running it.

Dynamo traces the reference's forward with dynamic input sizes (init arguments are constants of the graph),
inductor generates its Python wrapper and Triton kernels, and the capture stops there: nothing inductor
generated is executed, so the same path works on a CPU without a GPU driver (inductor's Triton backend for
the CPU, `cpu_backend = "triton"`) and on CUDA.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Iterator

import torch

_SOURCE_RE = re.compile(r"^L\['(\w+)'\](?:\.(size|stride)\(\)\[(\d+)\])?$")
# a tensor the reference holds: L['self']._modules['norm']._parameters['weight'] is state-dict name norm.weight
_HELD_RE = re.compile(r"^L\['self'\]((?:\._modules\['\w+'\])*)\._(?:parameters|buffers)\['(\w+)'\]$")
HELD_PREFIX = "self."  # a placeholder's input name for a held tensor: no forward argument's name has a dot


class CaptureError(Exception):
    """Inductor could not lower the reference (graph break, unsupported op, no Triton backend)."""


class _Captured(Exception):
    """Raised from the codegen hook once the source is in hand: stops inductor before it compiles."""


@dataclass(frozen=True)
class Placeholder:
    """One argument of the generated `call`: a forward input, a size/stride of one, or a parameter or buffer of
    the reference (input name `self.<state-dict name>`)."""

    input_name: str
    prop: str | None  # None (the input itself), "size" or "stride"
    index: int | None


@dataclass(frozen=True)
class CapturedGraph:
    """The wrapper source inductor generated for one reference instance, and what its arguments are."""

    source: str
    placeholders: list[Placeholder]


def _source_name(source: Any) -> str:
    name = getattr(source, "name", "")
    return name() if callable(name) else str(name)


def _placeholders(gm: Any) -> list[Placeholder]:
    """Dynamo's graph inputs as forward inputs or their sizes; CaptureError for anything else."""
    out = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        grapharg = node.meta.get("grapharg")
        name = _source_name(grapharg.source) if grapharg is not None and grapharg.source is not None else ""
        held = _HELD_RE.match(name)
        if held is not None:
            modules = re.findall(r"\['(\w+)'\]", held.group(1))
            out.append(Placeholder(HELD_PREFIX + ".".join([*modules, held.group(2)]), None, None))
            continue
        found = _SOURCE_RE.match(name)
        if found is None:
            raise CaptureError(f"the traced graph reads {name or node.name}, which is not a forward input or its "
                               "size (a parameter or buffer of the reference?)")
        out.append(Placeholder(found.group(1), found.group(2), int(found.group(3)) if found.group(3) else None))
    return out


@contextlib.contextmanager
def _inductor_settings(device_type: str) -> Iterator[None]:
    """Inductor configured for a capture: Triton on every device, no caches (a cache hit skips codegen; fake
    tensors' dispatch cache costs more than it saves here), one symbol per traced size, scans unsplit."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config
    import torch.fx.experimental._config as symbolic_config

    settings = [(inductor_config, "cpu_backend", "triton"), (inductor_config, "fx_graph_cache", False),
                (inductor_config, "compile_threads", 1),  # nothing is compiled: no pool of compile workers
                (dynamo_config, "specialize_float", True),
                # Fake tensors' dispatch cache checks each entry's symbolic sizes: on a reference unrolled into a
                # long graph (a loop over blocks of einsums) it took 41% of the capture (32.8 s against 19.3 s,
                # CPU), and the lowered source is the same without it.
                (dynamo_config, "fake_tensor_cache_enabled", False),
                # Without this, sizes that happen to be equal in the traced inputs (4096 rows × 4096 columns)
                # become one symbol, and the program is wrong for every other shape.
                (symbolic_config, "use_duck_shape", False)]
    saved = [(module, name, getattr(module, name)) for module, name, _ in settings if hasattr(module, name)]
    for module, name, value in settings:
        if hasattr(module, name):
            setattr(module, name, value)
    from torch._inductor import ir

    # A long scan on CUDA is a split scan (its blocks pass partial sums through a workspace): one program per
    # row instead, a kernel the seed launches as any other (the loop's to make faster).
    scan_splits = ir.Scan.__dict__.get("num_splits")
    if isinstance(scan_splits, classmethod):
        def unsplit(cls: Any, *args: Any, **kwargs: Any) -> Any:
            return scan_splits.__func__(cls, *args, **kwargs)[0], 1

        ir.Scan.num_splits = classmethod(unsplit)  # type: ignore[assignment,method-assign]
    patched = None
    if device_type != "cuda":
        import torch.utils._triton as torch_triton

        # no GPU driver: the backend hash only names inductor's cache entries, which the capture never uses
        patched = torch_triton.triton_hash_with_backend
        torch_triton.triton_hash_with_backend = lambda: "aka-capture-cpu"  # type: ignore[assignment]
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        if isinstance(scan_splits, classmethod):
            ir.Scan.num_splits = scan_splits  # type: ignore[assignment,method-assign]
        if patched is not None:
            import torch.utils._triton as torch_triton

            torch_triton.triton_hash_with_backend = patched  # type: ignore[assignment]


def capture(model: torch.nn.Module, inputs: dict[str, Any]) -> CapturedGraph:
    """Inductor's generated wrapper source for `model(**inputs)`; CaptureError with the reason otherwise."""
    import torch._dynamo
    from torch._inductor import graph as inductor_graph
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from aka_tui.agent.seed_complex import real_pairs
    from aka_tui.agent.seed_decompositions import seed_decompositions

    device = next((v.device for v in inputs.values() if isinstance(v, torch.Tensor)), torch.device("cpu"))
    sources: list[str] = []
    placeholders: list[list[Placeholder]] = []
    original_codegen = inductor_graph.GraphLowering.codegen

    def codegen(self: Any) -> Any:
        result = original_codegen(self)
        code = result[0] if isinstance(result, tuple) else result
        sources.append(str(getattr(code, "value", code)))
        raise _Captured()

    def lower(gm: Any, example_inputs: list[Any], **kwargs: Any) -> Any:  # the aten graph inductor lowers
        return compile_fx_inner(real_pairs(gm, example_inputs) or gm, example_inputs, **kwargs)

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        placeholders.append(_placeholders(gm))
        return compile_fx(gm, example_inputs, inner_compile=lower, decompositions=seed_decompositions())

    torch._dynamo.reset()
    inductor_graph.GraphLowering.codegen = codegen  # type: ignore[method-assign]
    try:
        # attention as its math (matrix products the seed's GEMM takes, a softmax inductor writes), not a call
        # of a fused attention library kernel that no candidate can own
        with _inductor_settings(device.type), torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
            compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=True)
            compiled(**inputs)
    except Exception as exc:  # inductor wraps our stop signal; anything else is a real failure
        if not sources:
            reason = _first_line(exc)
            raise CaptureError(f"torch.compile could not lower the reference: {reason}") from None
    finally:
        inductor_graph.GraphLowering.codegen = original_codegen  # type: ignore[method-assign]
        torch._dynamo.reset()
    if not sources or not placeholders:
        raise CaptureError("torch.compile produced no graph for the reference (nothing to lower)")
    return CapturedGraph(sources[0], placeholders[0])


def _first_line(exc: BaseException) -> str:
    """The first informative line: past dynamo's "backend='…' raised:" header to the error it wraps."""
    text = [t.strip() for t in str(exc).strip().splitlines() if t.strip() and not t.startswith("Set TORCH")]
    while len(text) > 1 and text[0].endswith("raised:"):
        text = text[1:]
    return (text[0] if text else type(exc).__name__)[:240]
