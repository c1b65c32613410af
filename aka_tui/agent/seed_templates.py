"""The text of a compiler-seeded candidate around its kernels: the header (imports, the CPU interpreter's
stand-ins for libdevice, TUNABLES), the runtime helpers its programs call, and its `Model`. Filled in by
`seed_source.assemble`."""

HEADER = '''"""Compiler seed for {problem}: torch.compile (inductor, torch {torch_version}) lowered the reference to
Triton; its kernels are this file's own, launched by plain launchers whose block sizes, warps and stages are
TUNABLES. One program per combination of init arguments and input dtypes of the problem's shapes, and more where
a trace held sizes fixed."""

import math
import os

import torch
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from torch._inductor.runtime.triton_helpers import math as tl_math
from triton.language.extra import libdevice

if os.environ.get("TRITON_INTERPRET") == "1":  # the CPU interpreter cannot run libdevice: triton.language twins

    class _InterpretedLibdevice:
        """libdevice functions as triton.language operations (interpreter only)."""

        def __getattr__(self, name):
            return getattr(tl, name, None) or getattr(tl.math, name)

        @staticmethod
        def pow(base, exponent):  # torch.pow's cases, in nested wheres (the interpreter's `&` fails on scalars)
            magnitude = tl.exp2(exponent * tl.log2(tl.abs(base)))
            whole = tl.floor(exponent) == exponent
            odd = tl.floor(exponent * 0.5) * 2.0 != exponent
            negative = tl.where(whole, tl.where(odd, -magnitude, magnitude), float("nan"))
            zero = tl.where(exponent == 0, 1.0, tl.where(exponent < 0, float("inf"), 0.0))
            return tl.where(base == 0, zero, tl.where(base < 0, negative, magnitude))

        @staticmethod
        def tanh(x):
            return 2.0 * tl.sigmoid(2.0 * x) - 1.0

        @staticmethod
        def log1p(x):
            return tl.log(1.0 + x)

        @staticmethod
        def expm1(x):
            return tl.exp(x) - 1.0

        @staticmethod
        def nearbyint(x):  # round half to even, as the GPU's default rounding mode (torch.round)
            low = tl.floor(x)
            frac = x - low
            odd = low - 2.0 * tl.floor(low * 0.5) != 0.0
            return tl.where(frac > 0.5, low + 1.0, tl.where(frac < 0.5, low, tl.where(odd, low + 1.0, low)))

        rint = nearbyint

        @staticmethod
        def isnan(x):
            return x != x

        @staticmethod
        def isinf(x):
            return tl.abs(x) == float("inf")

    libdevice = _InterpretedLibdevice()

    class _InterpretedHelpers:
        """inductor's triton_helpers with its NaN-propagating max/min/any reductions as the interpreter's native
        ones (numpy's max and min propagate NaN as inductor's combine functions do; a custom combine function
        runs element by element in the interpreter: seconds per 1024-wide row)."""

        def __init__(self, helpers):
            self._helpers = helpers

        def __getattr__(self, name):
            return getattr(self._helpers, name)

        @staticmethod
        def max2(a, dim):
            return tl.max(a, dim)

        @staticmethod
        def min2(a, dim):
            return tl.min(a, dim)

        @staticmethod
        def any(a, dim):
            return tl.max(a.to(tl.int8), dim) != 0

    triton_helpers = _InterpretedHelpers(triton_helpers)

TUNABLES = {tunables!r}
SEARCH_SPACE = {space!r}
'''

RUNTIME = '''

def _seed_empty(device, size, stride, dtype):
    """A buffer of the generated code's layout."""
    return torch.empty_strided(size, stride, dtype=dtype, device=device)


def _seed_reinterpret(tensor, size, stride, offset):
    """A view of a buffer with another size and stride (the generated code reuses buffers)."""
    return torch.as_strided(tensor, size, stride, offset)


def _seed_program(init, inputs):
    """The program of a call: of those traced for its input dtypes, the one whose init arguments differ in the
    fewest values and, among those, whose fixed sizes (the sizes a trace held fixed: a Python loop ran over
    them) the inputs miss in the fewest places."""
    dtypes = [str(v.dtype) for v in inputs.values() if isinstance(v, torch.Tensor)]
    best = None
    for program_init, program_dtypes, program, fixed in _PROGRAMS:
        if program_dtypes == dtypes:
            misfits = sum(not isinstance(inputs.get(name), torch.Tensor) or inputs[name].dim() <= dim
                          or inputs[name].shape[dim] != size for name, dim, size in fixed)
            distance = (sum(program_init.get(k) != v for k, v in init.items()), misfits)
            if best is None or distance < best[0]:
                best = (distance, program)
    return None if best is None else best[1]
'''

MODEL = '''

class Model(torch.nn.Module):
    def __init__(self{init_params}):
        super().__init__()
        self._seed_init = {init_dict}
        self._seed_held = {{}}  # the reference's parameters and buffers by state-dict name (_load_from_state_dict)
{tables_init}
    def forward(self{forward_params}):
        inputs = {forward_dict}
        program = _seed_program(self._seed_init, inputs)
        if program is None:
            raise NotImplementedError("no program was generated for these input dtypes")
        device = next(v.device for v in inputs.values() if isinstance(v, torch.Tensor))
        outputs = list(program({program_inputs}, device))
        if len(outputs) < len(_ALIASES) and len(outputs) == sum(a is None for a in _ALIASES):
            # outputs that are the reference's own (mutated) inputs: the generated code wrote them in place
            produced = iter(outputs)
            outputs = [inputs[a] if a is not None else next(produced) for a in _ALIASES]
        if _STRUCTURE[0] == "dict":
            return dict(zip(_STRUCTURE[1], outputs))
        if _STRUCTURE[0] == "tuple":
            return tuple(outputs)
        return outputs[0]
{tables_method}
    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """The reference's parameters and buffers (the evaluator loads its state dict into the candidate), kept
        by state-dict name for the programs that read them; a tensor no program reads loads all the same."""
        for key, value in state_dict.items():
            if key.startswith(prefix):
                self._seed_held["self." + key[len(prefix):]] = value.detach().clone()
'''

