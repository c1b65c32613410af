"""Interpreted kernels in a process whose Triton compiles: a scalar kernel argument used as a loop bound
(`range(0, n)`) indexes on every Triton the project runs with (3.6 on the GPU image converted its one-element
array with int(), which NumPy 2 refuses), and the interpreter is as it was afterwards."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from aka_tui.bench.problem.interpreted_library import library_interpreted


def test_a_scalar_argument_is_an_index_and_the_interpreter_is_restored() -> None:
    from triton.runtime import interpreter

    before = interpreter._patch_lang_tensor

    class Tensor:  # stands in for tl.tensor, whose attributes the interpreter patches per kernel call
        pass

    with library_interpreted():
        assert interpreter._patch_lang_tensor is not before
        scope = interpreter._LangPatchScope()
        interpreter._patch_lang_tensor(Tensor, scope)
        scalar = Tensor()
        scalar.handle = SimpleNamespace(data=np.array([7], dtype=np.int32))  # as the interpreter holds a scalar
        assert list(range(0, scalar, 3)) == [0, 3, 6]
        scope.restore()
        assert not hasattr(Tensor, "__index__")
    assert interpreter._patch_lang_tensor is before
