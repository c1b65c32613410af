"""The gated delta rule reference kernel in every form its reference defines: the decode step (both passes),
several tokens with grouped heads and gates from A_log/a/dt_bias/b, a state pool in place or returned,
packed sequences, no state, no L2 norm (CPU interpreter, float32)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

KD, VD = 32, 24


@pytest.fixture(scope="module")
def modules() -> tuple[ModuleType, ModuleType]:
    kernel = import_file(REPO / "kb/family/linear_attention/linear_attn_gated_delta_decode.py", "gdr_kernel")
    kernel.TUNABLES.update(BLOCK_V=16)  # two column slices, the second one partial
    return kernel, import_file(REPO / "problems/linear_attn_gated_delta_decode/reference.py", "gdr_reference")


def _run(model_class: Any, init: dict[str, Any], args: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    copies = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in args.items()}
    return model_class(**init)(**copies), copies


def _tokens(batch: int, tokens: int, q_heads: int, heads: int, fused_gates: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(tokens + 10 * heads)
    args = {"q": torch.randn(batch, tokens, q_heads, KD), "k": torch.randn(batch, tokens, q_heads, KD),
            "v": torch.randn(batch, tokens, heads, VD)}
    if fused_gates:
        args.update(A_log=torch.randn(heads) * 0.5, a=torch.randn(batch, tokens, heads),
                    dt_bias=torch.randn(heads), b=torch.randn(batch, tokens, heads))
    else:
        args.update(g=-torch.rand(batch, tokens, heads), beta=torch.rand(batch, tokens, heads))
    return args


CASES = {
    "decode": ({}, lambda: {"q": torch.randn(3, 5, KD), "k": torch.randn(3, 5, KD), "v": torch.randn(3, 5, VD),
                            "g": -torch.rand(3, 5), "beta": torch.rand(3, 5), "state": torch.randn(3, 5, KD, VD)}),
    "tokens, fused gates, pool in place": (
        {}, lambda: {**_tokens(2, 5, 2, 4, True), "state": torch.randn(5, 4, KD, VD),
                     "state_indices": torch.tensor([3, 0], dtype=torch.int32)}),
    "tokens, pool returned, F.normalize, scale": (
        {"inplace_final_state": False, "l2norm_clamp": True, "scale": 0.3, "softplus_beta": 2.0,
         "softplus_threshold": 1.0},
        lambda: {**_tokens(2, 4, 1, 3, True), "state": torch.randn(4, 3, KD, VD).transpose(0, 1).contiguous()
                 .transpose(0, 1), "state_indices": torch.tensor([2, 1], dtype=torch.int32)}),
    "packed sequences, no state, no L2 norm": (
        {"use_qk_l2norm": False},
        lambda: {**_tokens(1, 7, 2, 2, False), "cu_seqlens": torch.tensor([0, 3, 3, 7], dtype=torch.int32)}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_its_reference(modules: tuple[ModuleType, ModuleType], name: str) -> None:
    kernel, reference = modules
    init, make = CASES[name]
    torch.manual_seed(0)
    args = make()
    (want_out, want_state), ref_args = _run(reference.Model, init, args)
    (got_out, got_state), kernel_args = _run(kernel.Model, init, args)
    torch.testing.assert_close(got_out, want_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_state, want_state, atol=1e-4, rtol=1e-4)
    if "state" in args:  # in place: both write the state they were given; returned: both leave it as it was
        for given in (ref_args, kernel_args):
            assert torch.equal(given["state"], args["state"]) != init.get("inplace_final_state", True)
        assert (got_state is kernel_args["state"]) == init.get("inplace_final_state", True)


def test_decode_step_walked_in_key_chunks(modules: tuple[ModuleType, ModuleType]) -> None:
    """BLOCK_K below k_dim: the two-pass path of one decode step."""
    kernel, reference = modules
    torch.manual_seed(1)
    args = CASES["decode"][1]()
    kernel.TUNABLES["BLOCK_K"] = 16
    try:
        (got_out, got_state), _ = _run(kernel.Model, {}, args)
    finally:
        kernel.TUNABLES["BLOCK_K"] = 256
    (want_out, want_state), _ = _run(reference.Model, {}, args)
    torch.testing.assert_close(got_out, want_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_state, want_state, atol=1e-4, rtol=1e-4)


def test_reference_rejects_calls_that_do_not_fit(modules: tuple[ModuleType, ModuleType]) -> None:
    """A wrong argument mapping in the transfer search must fail, not compute something else."""
    _, reference = modules
    args = {**_tokens(1, 2, 2, 4, True), "state": torch.randn(2, 4, KD, VD)}  # a pool of 2 for 1 sequence
    with pytest.raises(ValueError):
        reference.Model()(**args)
    with pytest.raises(ValueError):
        reference.Model()(**{**args, "state": None, "cu_seqlens": torch.tensor([0], dtype=torch.int32)})


def test_returned_pool_copied_as_a_gpu_launches_it(modules: tuple[ModuleType, ModuleType],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One slot per copy program (the interpreter copies tiles of slots): the same pool."""
    kernel, reference = modules
    monkeypatch.setattr(kernel, "_INTERPRETED", False)
    init, make = CASES["tokens, pool returned, F.normalize, scale"]
    torch.manual_seed(2)
    args = make()
    (_, want_state), _ = _run(reference.Model, init, args)
    (_, got_state), _ = _run(kernel.Model, init, args)
    torch.testing.assert_close(got_state, want_state, atol=1e-4, rtol=1e-4)


LOOP_CONFIGS = [  # (SEQ_BLOCK_V, SEQ_WARPS, PREFETCH, FUSED_REDUCE) of the token loop
    (8, 1, 0, 0), (8, 2, 1, 1), (16, 4, 1, 0), (16, 1, 0, 1), (32, 8, 1, 1), (64, 4, 1, 1)]


@pytest.mark.parametrize("packed", [False, True], ids=["batched", "packed"])
def test_token_loop_tunables_match_the_recurrence(modules: tuple[ModuleType, ModuleType],
                                                  monkeypatch: pytest.MonkeyPatch, packed: bool) -> None:
    """The token loop with and without the hand pipelining, with and without the fused reductions, at several
    tiles and warp counts: outputs and final states of the plain PyTorch recurrence (2 sequences, 5 tokens, a
    pool in place, gates from A_log/a/dt_bias/b; packed: lengths 2 and 3 and an empty one)."""
    kernel, reference = modules
    torch.manual_seed(3)
    kd = vd = 32
    heads, q_heads = 4, 2
    if packed:
        args: dict[str, Any] = {"q": torch.randn(1, 5, q_heads, kd), "k": torch.randn(1, 5, q_heads, kd),
                                "v": torch.randn(1, 5, heads, vd), "A_log": torch.randn(heads) * 0.5,
                                "a": torch.randn(1, 5, heads), "dt_bias": torch.randn(heads),
                                "b": torch.randn(1, 5, heads),
                                "cu_seqlens": torch.tensor([0, 2, 2, 5], dtype=torch.int32),
                                "state": torch.randn(4, heads, kd, vd) * 0.5,
                                "state_indices": torch.tensor([3, 0, 1], dtype=torch.int32)}
    else:
        args = {"q": torch.randn(2, 5, q_heads, kd), "k": torch.randn(2, 5, q_heads, kd),
                "v": torch.randn(2, 5, heads, vd), "A_log": torch.randn(heads) * 0.5, "a": torch.randn(2, 5, heads),
                "dt_bias": torch.randn(heads), "b": torch.randn(2, 5, heads),
                "state": torch.randn(3, heads, kd, vd) * 0.5, "state_indices": torch.tensor([2, 0], dtype=torch.int32)}
    (want_out, want_state), _ = _run(reference.Model, {}, args)
    assert not torch.equal(want_state, args["state"])  # the recurrence moved the state
    for block_v, warps, prefetch, fused in LOOP_CONFIGS:
        for key, value in (("SEQ_BLOCK_V", block_v), ("SEQ_WARPS", warps), ("PREFETCH", prefetch),
                           ("FUSED_REDUCE", fused)):
            monkeypatch.setitem(kernel.TUNABLES, key, value)
        (got_out, got_state), _ = _run(kernel.Model, {}, args)
        where = f"SEQ_BLOCK_V={block_v} SEQ_WARPS={warps} PREFETCH={prefetch} FUSED_REDUCE={fused}"
        torch.testing.assert_close(got_out, want_out, atol=2e-5, rtol=2e-5, msg=lambda m: f"{where}: out: {m}")
        torch.testing.assert_close(got_state, want_state, atol=2e-5, rtol=2e-5,
                                   msg=lambda m: f"{where}: state: {m}")


CHUNK_CASES = {
    "two sequences of 40 tokens, fused gates, pool in place": (
        {}, lambda: {**_tokens(2, 40, 2, 4, True), "state": torch.randn(5, 4, KD, VD) * 0.5,
                     "state_indices": torch.tensor([3, 0], dtype=torch.int32)}),
    "pool returned, F.normalize, scale, gates given": (
        {"inplace_final_state": False, "l2norm_clamp": True, "scale": 0.3},
        lambda: {**_tokens(1, 37, 1, 3, False), "state": torch.randn(2, 3, KD, VD) * 0.5,
                 "state_indices": torch.tensor([1], dtype=torch.int32)}),
    "slow decay, strong updates, keys alike (the inverse's high powers count)": (
        {}, lambda: {"q": torch.randn(1, 48, 1, KD), "k": torch.randn(1, 1, 1, KD) + 0.3 * torch.randn(1, 48, 1, KD),
                     "v": torch.randn(1, 48, 2, VD), "g": -0.02 * torch.rand(1, 48, 2),
                     "beta": 0.5 + 0.5 * torch.rand(1, 48, 2), "state": torch.randn(1, 2, KD, VD)}),
    "packed sequences of 20, 0 and 45 tokens, no state": (
        {}, lambda: {**_tokens(1, 65, 2, 2, True), "cu_seqlens": torch.tensor([0, 20, 20, 65], dtype=torch.int32)}),
}


@pytest.mark.parametrize("name", list(CHUNK_CASES))
def test_chunked_form_matches_the_recurrence(modules: tuple[ModuleType, ModuleType],
                                             monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """CHUNK: the recurrence folded into chunks of 16 tokens (the WY form, the inverse by doubling), a partial
    last chunk, in every interface form; outputs and final states of the plain PyTorch recurrence."""
    kernel, reference = modules
    monkeypatch.setitem(kernel.TUNABLES, "CHUNK", 16)
    monkeypatch.setitem(kernel.TUNABLES, "CHUNK_V", 16)
    launched = []
    chunked = kernel._gated_delta_chunk_kernel
    monkeypatch.setattr(kernel, "_gated_delta_chunk_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: launched.append(grid) or chunked[grid]})())
    init, make = CHUNK_CASES[name]
    torch.manual_seed(4)
    args = make()
    (want_out, want_state), _ = _run(reference.Model, init, args)
    (got_out, got_state), _ = _run(kernel.Model, init, args)
    assert launched, "the chunked form did not run"
    torch.testing.assert_close(got_out, want_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_state, want_state, atol=1e-4, rtol=1e-4)


_CHUNK_COMPILE = """
import sys
from pathlib import Path
import torch
from aka_tui.bench.evaluator.target_compile import install_compile_only
compiled = install_compile_only(90)
from aka_tui.bench.problem.module_loading import import_file
m = import_file(Path(sys.argv[1]), "gdr_chunk_compile")
q = torch.randn(1, 100, 2, 128, dtype=torch.bfloat16)
v = torch.randn(1, 100, 4, 128, dtype=torch.bfloat16)
a = torch.randn(1, 100, 4, dtype=torch.bfloat16)
for chunk, tf32 in ((64, 1), (32, 1), (16, 1)):
    m.TUNABLES.update(CHUNK=chunk, CHUNK_TF32=tf32)
    compiled.clear()
    m.launch_linear_attn_gated_delta_decode(q, q.clone(), v, A_log=torch.randn(4), a=a, dt_bias=torch.randn(4), b=a,
                                            state=torch.randn(2, 4, 128, 128),
                                            state_indices=torch.tensor([1], dtype=torch.int32))
    print(dict(compiled)["_gated_delta_chunk_kernel"])
"""


def test_chunked_form_compiles_for_hopper() -> None:
    """The chunked form (tf32 dots, chunks of 64, 32 and 16 tokens) compiles for sm_90 in this checkout's Triton."""
    from tests.knowledge.hopper_compile import run_compile_script

    run = run_compile_script(_CHUNK_COMPILE, str(REPO / "kb/family/linear_attention/linear_attn_gated_delta_decode.py"))
    sizes = [int(n) for n in run.stdout.split()]
    assert len(sizes) == 3 and min(sizes) > 500 and len(set(sizes)) == 3, run.stdout
