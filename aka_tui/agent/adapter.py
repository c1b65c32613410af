"""Single-file candidates from a transfer: the knowledge base's kernel inlined, with an adapter `Model` that
takes the new problem's init and forward arguments and maps them onto the kernel's.

The kernel keeps its TUNABLES / SEARCH_SPACE / INERT literals at module level, so the offline proposer tunes a
transferred kernel exactly as it tunes the kernel itself; the adapter only moves arguments and picks outputs
(views, no computation), so the candidate is as real as the kernel.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace
from typing import Any

from aka_tui.agent.transfer import TransferMatch
from aka_tui.knowledge.reference_kernels import ReferenceKernel

INNER_CLASS = "_TransferredKernelModel"

_ADAPTER_TEMPLATE = '''

# -----------------------------------------------------------------------------------------------------------
# Adapter (the agent's transfer from the knowledge base's {entry_id}): the problem's interface mapped onto the
# kernel's, found by running both on probe inputs. Specs: ["init", name] a problem init argument, ["const", v],
# ["dim", input, axis] a size of an input, ["input", name] a problem input, ["none"] None, ["default"] left out,
# ["ones" | "zeros", input] a vector of ones or zeros as long as the input's last axis (a weight or bias the
# problem does not have), made once per size, dtype and device.
_ADAPTER_INIT = {init_map!r}
_ADAPTER_ARGS = {arg_map!r}
_ADAPTER_OUTPUTS = {out_map!r}
_ADAPTER_STRUCTURE = {structure!r}


def _adapter_flat(result):
    """The kernel's outputs as a flat list."""
    if isinstance(result, dict):
        return list(result.values())
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


class Model(torch.nn.Module):
    def __init__(self{init_params}):
        super().__init__()
        self._adapter_init = {init_dict}
        self._adapter_models = {{}}
        self._adapter_identities = {{}}
        # the kernel's init values that do not depend on the inputs, resolved once
        self._adapter_fixed = {{k: self._adapter_init[v[1]] if v[0] == "init" else v[1]
                               for k, v in _ADAPTER_INIT.items() if v[0] in ("init", "const")}}

    # Written out from the specs above, so that a call only reads sizes and moves tensors (its host time is part
    # of S_e2e): one kernel model per combination of the input sizes it is built with.
    def forward(self{forward_params}):
        _adapter_dims = ({dims_expr})
        _adapter_model = self._adapter_models.get(_adapter_dims)
        if _adapter_model is None:
            _adapter_model = self._adapter_models[_adapter_dims] = {inner}(
                **self._adapter_fixed, **dict(zip({dim_names!r}, _adapter_dims)))
        _adapter_out = _adapter_flat(_adapter_model.forward({call_args}))
        return {result_expr}

    def _adapter_identity(self, fill, like):
        """A vector of ones or zeros as long as `like`'s last axis, in its dtype and device (kept)."""
        key = (fill, like.shape[-1], like.dtype, like.device)
        if key not in self._adapter_identities:
            self._adapter_identities[key] = (torch.ones if fill == "ones" else torch.zeros)(
                like.shape[-1], dtype=like.dtype, device=like.device)
        return self._adapter_identities[key]
'''


# An input the kernel writes into while the problem only reads it gets a copy, made by a kernel of the candidate's
# own (the problem's output is a new tensor, so a real implementation writes every element of it).
_COPY_SOURCE = '''

@triton.jit
def _adapter_copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _adapter_copy(x):
    """A copy of x (contiguous) for the kernel to write into."""
    if not x.is_contiguous():
        return x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        _adapter_copy_kernel[(-(-n // 4096),)](x, out, n, BLOCK=4096, num_warps=4)
    return out
'''


def _param_list(fn: Any) -> tuple[str, list[str]]:
    """`, a, b=1.0` for a generated signature, and the parameter names."""
    parts, names = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        names.append(p.name)
        if p.default is inspect.Parameter.empty:
            parts.append(p.name)
        elif isinstance(p.default, (int, float, str, bool, type(None))):
            parts.append(f"{p.name}={p.default!r}")
        else:
            parts.append(f"{p.name}=None")
    return "".join(", " + part for part in parts), names


def adapter_source(match: TransferMatch, reference_model: Any) -> str:
    """The candidate file: the kernel's source with its Model renamed, then the adapter Model."""
    source = match.kernel.source
    inner = re.sub(r"^class Model\b", f"class {INNER_CLASS}", source, count=1, flags=re.MULTILINE)
    if inner == source:
        raise ValueError(f"{match.kernel.path}: no module-level `class Model` to adapt")
    if not re.search(r"^import torch$", inner, flags=re.MULTILINE):
        inner = "import torch\n" + inner
    if match.copied:
        for line in ("import triton.language as tl", "import triton"):
            if not re.search(rf"^{re.escape(line)}$", inner, flags=re.MULTILINE):
                inner = line + "\n" + inner
        inner = inner.rstrip("\n") + "\n" + _COPY_SOURCE
    init_params, init_names = _param_list(reference_model.__init__)
    forward_params, _ = _param_list(reference_model.forward)
    dims = [(k, v[1], v[2]) for k, v in match.init_map.items() if v[0] == "dim"]
    call_args = [(f"{k}=_adapter_copy({v[1]})" if k in match.copied else f"{k}={v[1]}") if v[0] == "input"
                 else f"{k}=self._adapter_identity({v[0]!r}, {v[1]})" if v[0] in ("ones", "zeros")
                 else f"{k}=None" for k, v in match.arg_map.items() if v[0] in ("input", "none", "ones", "zeros")]
    outputs = [f"_adapter_out[{spec[0]}].view({spec[2]}.shape)" if len(spec) > 1 else f"_adapter_out[{spec[0]}]"
               for spec in match.out_map]
    return inner.rstrip("\n") + "\n" + _ADAPTER_TEMPLATE.format(
        entry_id=match.kernel.entry_id, init_map=match.init_map, arg_map=match.arg_map, out_map=match.out_map,
        structure=match.structure, init_params=init_params, forward_params=forward_params, inner=INNER_CLASS,
        init_dict="{" + ", ".join(f"{n!r}: {n}" for n in init_names) + "}",
        dims_expr="".join(f"int({name}.shape[{axis}]), " for _, name, axis in dims),
        dim_names=tuple(k for k, _, _ in dims), call_args=", ".join(call_args),
        result_expr=_result_expr(match.structure, outputs))


def _result_expr(structure: tuple, outputs: list[str]) -> str:
    """The problem's output structure rebuilt from the kernel's flat outputs."""
    if structure[0] == "dict":
        return "{" + ", ".join(f"{key!r}: {out}" for key, out in zip(structure[1], outputs)) + "}"
    if structure[0] == "tuple":
        return "(" + "".join(f"{out}, " for out in outputs) + ")"
    return outputs[0]


def transferred_kernel(match: TransferMatch, reference_model: Any) -> ReferenceKernel:
    """The matched kernel as a tunable kernel whose source is the adapted candidate."""
    return replace(match.kernel, entry_id=f"{match.kernel.entry_id}+adapter", origin="transfer",
                   text=adapter_source(match, reference_model))
