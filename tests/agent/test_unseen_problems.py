"""The agent on problems nobody prepared: transfer from the knowledge base by semantics, compiler seeding, a
person's kernel as the start, the path recorded per iteration, and one clear line when nothing applies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aka_tui.agent.adapter import adapter_source
from aka_tui.agent.probe import load_modules, make_probes
from aka_tui.agent.starting_point import find_starting_point
from aka_tui.agent.transfer import find_transfers
from aka_tui.bench.problem.lookup import default_suite_dir, load_problem
from aka_tui.errors import KbEntryError, ProposerError
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb
from tests.agent.optimize_runs import REPO, UNSEEN, correct_and_real, optimize, recorded, started_correct_and_real

KERNELS = reference_kernels(load_kb(default_kb_dir()))


def test_transfer_matches_by_semantics_not_by_names() -> None:
    problem = load_problem(UNSEEN / "scaled_hidden_norm")
    probes = make_probes(problem, "cpu")
    matches = find_transfers(problem, KERNELS, probes, default_suite_dir())
    assert matches, "an RMSNorm behind another interface must be found by its outputs"
    match = matches[0]
    assert match.kernel.entry_id == "rms-norm-reference-kernel"
    assert match.arg_map == {"x": ["input", "hidden_states"], "weight": ["input", "gamma"]}
    assert match.init_map["eps"] == ["init", "variance_epsilon"]  # the small-magnitude probe pins eps
    assert match.structure == ("dict", ("normalized",))
    # the same interface with another computation matches nothing: semantics decide, not names
    other = load_problem(UNSEEN / "centered_swish")
    assert find_transfers(other, KERNELS, make_probes(other, "cpu"), default_suite_dir()) == []


def test_optimize_transfers_a_known_family_behind_another_interface(tmp_path: Path) -> None:
    started_correct_and_real(UNSEEN / "scaled_hidden_norm", tmp_path / "sessions",
                              "starting point: transfer from rms-norm-reference-kernel",
                              "transfer from rms-norm-reference-kernel")


def test_a_persons_kernel_is_the_start(tmp_path: Path) -> None:
    own = tmp_path / "mine.py"
    shutil.copyfile(default_kb_dir() / "family" / "activation" / "silu_and_mul.py", own)
    problem = load_problem(REPO / "problems" / "silu_and_mul")
    point = find_starting_point(problem, "cpu", "smoke", start_file=own)
    assert point.path == "person" and point.kernel.origin == "person" and point.kernel.source == own.read_text()
    bare = tmp_path / "bare.py"
    bare.write_text("import torch\n\nclass Model(torch.nn.Module):\n    pass\n")
    with pytest.raises(KbEntryError, match="TUNABLES"):
        find_starting_point(problem, "cpu", "smoke", start_file=bare)
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\x88\xa0 not text")
    with pytest.raises(ProposerError, match="not UTF-8"):
        find_starting_point(problem, "cpu", "smoke", start_file=binary)


def test_no_path_is_one_line_naming_what_would_help(tmp_path: Path) -> None:
    problem = load_problem(UNSEEN / "centered_swish")
    with pytest.raises(ProposerError) as raised:
        find_starting_point(problem, "cpu", "smoke", allow_seed=False)
    message = str(raised.value)
    assert "\n" not in message and "no knowledge-base kernel reproduces its outputs" in message
    assert "--start FILE" in message and "--proposer anthropic" in message


def test_a_reference_that_draws_random_numbers_is_one_line_saying_so(tmp_path: Path) -> None:
    """A forward that adds noise it draws itself gives other outputs on the same inputs: no path can be checked
    against it, and the line says that rather than listing the paths tried."""
    directory = tmp_path / "noisy_swish"
    shutil.copytree(UNSEEN / "centered_swish", directory)
    silu = "y = torch.nn.functional.silu(x.float())"
    (directory / "reference.py").write_text((directory / "reference.py").read_text().replace(
        silu, silu + " + torch.rand_like(x.float())"))
    with pytest.raises(ProposerError) as raised:
        find_starting_point(load_problem(directory), "cpu", "smoke", transfer_budget_s=5.0)
    message = str(raised.value)
    assert "\n" not in message and "random draws in its forward" in message
    assert "takes its random numbers as inputs" in message


def test_the_semantic_match_probes_on_the_cpu_when_the_reference_runs_there() -> None:
    # a trial mapping's out-of-range index is a device-side assert on CUDA (the process's CUDA context ends);
    # the match therefore probes on the CPU even when the session runs on "cuda" (no CUDA touched here)
    from aka_tui.agent.starting_point import matching_probes

    probes = matching_probes(load_problem(UNSEEN / "scaled_hidden_norm"), "cuda")
    assert probes and all(v.device.type == "cpu" for p in probes for v in p.inputs.values() if hasattr(v, "device"))


def test_a_reference_that_runs_nowhere_is_one_line(tmp_path: Path) -> None:
    from aka_tui.agent.starting_point import matching_probes

    directory = tmp_path / "broken_reference"
    shutil.copytree(UNSEEN / "centered_swish", directory)
    (directory / "reference.py").write_text((directory / "reference.py").read_text().replace(
        "def forward(self", "def forward(self, *_, **__):\n        raise RuntimeError('needs a device')\n\n"
        "    def _unused(self", 1))
    with pytest.raises(ProposerError) as caught:
        matching_probes(load_problem(directory), "cpu")
    assert "reference does not run on probe inputs on cpu" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_transfer_derives_sizes_and_flags_the_new_interface_leaves_out() -> None:
    """Attention with no init arguments, no mask, head size 40 and its own argument names: the varlen
    attention kernel's head counts come from the sizes its own problem's examples show they are (q.shape[-2],
    k.shape[-2]), its optional key offsets and cache arguments stay at their defaults, causal is off."""
    problem = load_problem(UNSEEN / "packed_bidirectional_attention")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "attention-prefill-varlen-reference-kernel"
    match = matches[0]
    assert match.arg_map["q"] == ["input", "query"] and match.arg_map["cu_seqlens"] == ["input", "offsets"]
    assert all(match.arg_map[name][0] != "input" for name in ("cu_seqlens_k", "seqused_k", "block_table"))
    assert match.init_map["num_heads"] == ["dim", "query", -2]
    assert match.init_map["head_dim"][0] == "dim" and match.init_map["causal"] == ["const", False]


def test_transfer_chooses_an_output_dtype_by_name() -> None:
    """A routed-experts layer that returns float32: the MoE kernel's `out_dtype: str | None` takes the dtype
    name of the reference's output (a name, never a size)."""
    problem = load_problem(UNSEEN / "routed_experts_fp32_out")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "moe-fused-experts-reference-kernel"
    assert matches[0].arg_map["hidden"] == ["input", "x"]
    assert matches[0].init_map["out_dtype"] == ["const", "float32"]


def test_optimize_runs_the_transferred_attention_as_a_real_kernel(tmp_path: Path) -> None:
    """The varlen attention kernel behind an encoder's interface (no mask, head size 40, its own names), through
    the adapter and the evaluator: correct and real on every shape."""
    run = optimize(UNSEEN / "packed_bidirectional_attention", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from attention-prefill-varlen-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"]) for s in result["shapes"]]


def test_transfer_finds_the_align_kernel_behind_exact_sizes_and_runs_it(tmp_path: Path) -> None:
    """An expert-parallel rank's block schedule with data-dependent output sizes (no worst-case buffers), -1 for
    other ranks' experts, its own names and its init arguments in another order: the MoE align kernel with
    `exact_sizes` on, through the adapter and the evaluator, correct and real on every shape."""
    problem = load_problem(UNSEEN / "local_expert_schedule")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "moe-align-sort-reference-kernel"
    match = matches[0]
    assert match.arg_map == {"topk_ids": ["input", "routing"]}
    assert match.init_map == {"num_experts": ["init", "local_experts"], "block_size": ["init", "tile"],
                              "exact_sizes": ["const", True], "with_counts": ["default"]}
    assert match.structure == ("dict", ("rows", "tile_expert", "padded_rows"))
    run = optimize(UNSEEN / "local_expert_schedule", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from moe-align-sort-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"]) for s in result["shapes"]]


def test_an_in_place_kernel_serves_an_out_of_place_reference_through_copies(tmp_path: Path) -> None:
    """A reference that writes rows into copies of the paged caches and leaves the given ones alone: the KB's
    in-place cache-write kernel matches once the adapter hands it copies (made by the candidate's own copy
    kernel), and the evaluator finds the start correct (the inputs untouched) and real on every shape."""
    problem = load_problem(UNSEEN / "paged_row_scatter_copy")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "kv-cache-write-reference-kernel"
    assert matches[0].copied == ("key_cache", "value_cache") and "copies of" in matches[0].rationale
    in_place = load_problem(UNSEEN / "paged_row_scatter")  # the in-place reference needs no copy
    assert find_transfers(in_place, KERNELS, make_probes(in_place, "cpu"), default_suite_dir())[0].copied == ()
    run = optimize(UNSEEN / "paged_row_scatter_copy", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from kv-cache-write-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"], s.get("error")) for s in result["shapes"]]
    own = {name for s in result["shapes"] for name in s["audit"]["own_kernels"]}
    assert "_adapter_copy_kernel" in own, own


def test_a_plain_counting_sort_is_the_align_kernel_at_block_size_one(tmp_path: Path) -> None:
    """Routed pairs counted and stably sorted by expert (bincount, offsets, argsort: library calls under
    inductor, so no compiler seed): the MoE align kernel at block size 1 with its counts, through the adapter and
    the evaluator, correct and real on every shape."""
    problem = load_problem(UNSEEN / "expert_counting_sort")
    match = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())[0]
    assert match.kernel.entry_id == "moe-align-sort-reference-kernel"
    assert match.init_map["block_size"] == ["const", 1] and match.init_map["with_counts"] == ["const", True]
    assert match.out_map == [[3], [4], [0]]
    run = optimize(UNSEEN / "expert_counting_sort", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from moe-align-sort-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"], s.get("error")) for s in result["shapes"]]


def test_init_claims_offer_each_init_argument_to_one_parameter() -> None:
    """Namesakes first, then the first parameter of the argument's kind, in signature order, that has none."""
    from aka_tui.agent.transfer import Param, init_claims

    params = [Param("num_heads", None, 4), Param("kv_lora_rank", None, 512), Param("rope_dim", None, 64),
              Param("block_size", None, 16), Param("softmax_scale", None, 0.1)]
    claims = init_claims(params, {"heads": 16, "kv_lora_rank": 512, "rope": 64})
    assert claims == {"kv_lora_rank": "kv_lora_rank", "heads": "num_heads", "rope": "rope_dim"}


def test_an_optional_init_parameter_without_an_example_takes_its_annotated_kind() -> None:
    """`top_k: int | None = None` is offered int init arguments; a list of ints or a union of kinds is not a
    size, and keeps the wide "none" kind."""
    from aka_tui.agent.transfer_params import Param, init_candidates

    def offered(annotation: str) -> list:
        return init_candidates(Param("top_k", None, None, annotation), {"k": 4}, {}, {}, ["float32"])

    assert ["init", "k"] in offered("int | None")
    assert ["init", "k"] not in offered("list[int] | None") and ["init", "k"] not in offered("int | float | None")
    assert offered("str | None") == [["default"], ["const", "float32"]]


def test_transfer_maps_init_sizes_that_repeat_the_tensors() -> None:
    """MLA decode over a packed latent cache, with init sizes of its own names that repeat the tensors' (rope
    width 16, not DeepSeek's 64): the MLA kernel refuses sizes that disagree with the tensors, so each init
    argument must reach its own parameter before the search gives the forward mapping up; the block table stays
    out (the packed form)."""
    problem = load_problem(UNSEEN / "packed_latent_decode")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "attention-mla-decode-reference-kernel"
    match = matches[0]
    assert match.init_map["num_heads"] == ["init", "n_heads"]
    assert match.init_map["kv_lora_rank"] == ["init", "latent_rank"]
    assert match.init_map["rope_dim"] == ["init", "rope_width"]
    assert match.init_map["block_size"] == ["default"]
    assert match.arg_map["kv_cache"] == ["input", "latent_cache"]
    assert match.arg_map["seq_lens"] == ["input", "context_lens"]
    assert match.arg_map["block_tables"][0] != "input"


@pytest.mark.slow
def test_optimize_runs_the_transferred_mla_decode_as_a_real_kernel(tmp_path: Path) -> None:
    """The MLA kernel's packed mode behind that interface, through the adapter and the evaluator: correct and real
    on every shape."""
    run = optimize(UNSEEN / "packed_latent_decode", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from attention-mla-decode-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"]) for s in result["shapes"]]


def test_transfer_maps_block_scales_by_their_dtypes_not_their_names() -> None:
    """Routed experts over fp8 operands scaled per 64 x 64 block (activations per token and 64 columns), every
    argument named otherwise than the MoE kernel's: its block-scaled variant, ranked by the dtypes its own
    problem's quantised shapes pass (fp8 codes for hidden and weights, fp32 scales), the block size read from
    the scale shapes, a float32 output."""
    problem = load_problem(UNSEEN / "block_quantised_experts")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "moe-fused-experts-reference-kernel"
    assert matches[0].arg_map == {
        "hidden": ["input", "x"], "w1": ["input", "gate_up"], "w2": ["input", "down"],
        "topk_weights": ["input", "route_weights"], "topk_ids": ["input", "route_ids"],
        "w1_scale": ["input", "gate_up_scale"], "w2_scale": ["input", "down_scale"], "a1_scale": ["input", "x_scale"]}
    assert matches[0].init_map["out_dtype"] == ["const", "float32"]


@pytest.mark.slow
def test_optimize_runs_the_transferred_block_scaled_experts_as_a_real_kernel(tmp_path: Path) -> None:
    """The MoE kernel's fp8 path behind that interface, through the adapter and the evaluator (float32 output:
    the SwiGLU buffer stays float32, which the interpreter computes reliably): correct and real."""
    run = optimize(UNSEEN / "block_quantised_experts", tmp_path / "sessions")
    assert run.returncode == 0, run.stderr[-2000:]
    proposal, result = recorded(tmp_path / "sessions")
    assert proposal["path"] == "transfer from moe-fused-experts-reference-kernel"
    assert correct_and_real(result), [(s["shape_id"], s["status"]) for s in result["shapes"]]


def test_every_probe_of_a_published_problem_is_shrunk_to_fit_the_cpu() -> None:
    """A published problem has no smoke tier: its smallest shape is shrunk, and so is any further shape that
    pads the probes (a second probe once ran a fused MoE's reference at full size: over 24 GiB)."""
    from dataclasses import replace

    from aka_tui.agent.probe import load_modules, probe_shapes
    from aka_tui.bench.problem.shrink import CPU_INPUT_BUDGET_BYTES, input_bytes

    problem = load_problem(REPO / "tests" / "data" / "atrex_published" / "scaled_tanh_rows")
    big = replace(problem.shapes.pop("2"), shape_id="big", input_kwargs={"rows": 4096, "cols": 4096})
    problem.shapes.pop("1")
    problem.shapes["big"] = big
    _, module = load_modules(problem)
    assert input_bytes(problem, module, big) > CPU_INPUT_BUDGET_BYTES
    first, second = probe_shapes(problem, 2)
    assert second.shape_id.startswith("smoke.") and second.shape_id.endswith("@big")
    assert input_bytes(problem, module, second) <= CPU_INPUT_BUDGET_BYTES


def test_a_published_problems_probes_cover_init_arguments_only_its_larger_shapes_have() -> None:
    """A published problem's smoke tier is its smallest shape, shrunk: one combination of init arguments. A
    start is timed on every shape, so the probes also take the other combinations (shrunk as well)."""
    from aka_tui.agent.probe import probe_shapes

    problem = load_problem(REPO / "tests" / "data" / "atrex_published" / "scaled_tanh_rows")
    assert all(s.init_kwargs.get("cap") is None for s in problem.shapes_for("smoke"))
    caps = {(s.init_kwargs or {}).get("cap") for s in probe_shapes(problem, 2)}
    assert 10.0 in caps, caps


def test_a_match_whose_own_kernel_refuses_the_sizes_is_passed_over() -> None:
    """Per-row fp8 codes of rows 96 and 7168 wide: the per-group quantiser's reference matches (one group the
    row), but its kernel takes only power-of-two groups. Its adapted kernel runs on the small probes first, so
    the start is the next match, whose kernel reproduces them, and the passed-over match is said."""
    from aka_tui.agent.adapter import adapter_source
    from aka_tui.agent.starting_point import matching_probes
    from aka_tui.agent.transfer_check import adapted_kernel_fails

    problem = load_problem(UNSEEN / "row_scaled_fp8_codes")
    logged: list[str] = []
    point = find_starting_point(problem, "cpu", "smoke", log=logged.append)
    assert point.path == "transfer" and point.detail == "transfer from quant-fp8-per-token-reference-kernel", point
    assert any("passed over: quant-fp8-per-token-group-reference-kernel" in line and "power of two" in line
               for line in logged), logged
    probes = matching_probes(problem, "cpu")
    group = find_transfers(problem, [k for k in KERNELS if k.entry_id.startswith("quant-fp8-per-token-group")],
                           probes, default_suite_dir())
    reference, _ = load_modules(problem)
    assert group and adapted_kernel_fails(problem, adapter_source(group[0], reference.Model), probes) is not None


@pytest.mark.slow
def test_a_padded_cache_write_in_split_layouts_transfers(tmp_path: Path) -> None:
    """vLLM's split key and value cache layouts written token by token in a Python loop that skips padding
    slots: the loop's data-dependent branch stops inductor, and the KB's cache write (which takes these layouts)
    reproduces it; correct and real on every shape."""
    started_correct_and_real(UNSEEN / "split_layout_padded_loop", tmp_path / "sessions",
                             "starting point: transfer from kv-cache-write-reference-kernel",
                             "transfer from kv-cache-write-reference-kernel")


@pytest.mark.slow
def test_a_cache_write_whose_scales_an_init_argument_switches_transfers(tmp_path: Path) -> None:
    """bf16 caches with the scales ignored ("auto") and fp8 caches with the values divided by them, chosen by an
    init argument: one mapping (the scales to the KB kernel's) serves both, since a server passes scale 1 with
    "auto" and the small-magnitude probe leaves one-element tensors (scales) as they are; correct and real on
    every shape."""
    started_correct_and_real(UNSEEN / "cache_write_modes", tmp_path / "sessions",
                             "starting point: transfer from kv-cache-write-reference-kernel",
                             "transfer from kv-cache-write-reference-kernel")


@pytest.mark.slow
def test_a_scaled_fp8_cache_write_returning_new_caches_transfers_through_copies(tmp_path: Path) -> None:
    """Keys and values divided by per-tensor scales into fp8 caches, returned as new tensors: the KB's cache
    write (with its scales) reproduces it on copies of the caches; correct and real on every shape."""
    started_correct_and_real(UNSEEN / "scaled_slot_store", tmp_path / "sessions",
                             "starting point: transfer from kv-cache-write-reference-kernel",
                             "transfer from kv-cache-write-reference-kernel")


def test_a_cache_write_with_a_scale_per_head_transfers(tmp_path: Path) -> None:
    """Keys and values divided by one scale per KV head ([heads], viewed over the heads axis) into fp8 caches: the
    KB's cache write takes per-head (and per-token) scales, so it reproduces it; correct and real."""
    started_correct_and_real(UNSEEN / "head_scaled_slot_store", tmp_path / "sessions",
                             "starting point: transfer from kv-cache-write-reference-kernel",
                             "transfer from kv-cache-write-reference-kernel")


@pytest.mark.slow
def test_a_head_norm_over_heads_flattened_per_token_transfers(tmp_path: Path) -> None:
    """Query and key heads normalised while flattened per token ([tokens, heads * head_dim]): the KB's q/k head
    norm (which takes that layout with head_dim given) reproduces it, one launch for both; correct and real."""
    started_correct_and_real(UNSEEN / "flat_head_norm", tmp_path / "sessions",
                             "starting point: transfer from qk-head-norm-reference-kernel",
                             "transfer from qk-head-norm-reference-kernel")


@pytest.mark.parametrize("name, mapped", [("per_row_top_k_filter", {"top_k": ["input", "k"], "top_p": ["default"]}),
                                          ("row_top_k_mask", {"top_k": ["default"], "top_p": ["default"]})])
def test_a_top_k_filter_without_top_p_transfers_from_the_sampling_filter(name: str, mapped: dict) -> None:
    """A top-k filter alone, with a k per row (a tensor) or one k for every row (an init argument): the KB's
    top-k / top-p filter leaves top-p off when no p is given, and takes the init argument by its annotated kind
    (`top_k: int | None`) where no example shows it."""
    problem = load_problem(UNSEEN / name)
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "sampling-top-k-top-p-reference-kernel"
    assert {k: v for k, v in matches[0].arg_map.items() if k != "logits"} == mapped
    if name == "row_top_k_mask":
        assert matches[0].init_map["top_k"] == ["init", "k"]


@pytest.mark.slow
def test_optimize_runs_a_transferred_per_row_top_k_filter_as_a_real_kernel(tmp_path: Path) -> None:
    started_correct_and_real(UNSEEN / "per_row_top_k_filter", tmp_path / "sessions",
                             "starting point: transfer from sampling-top-k-top-p-reference-kernel",
                             "transfer from sampling-top-k-top-p-reference-kernel")


def test_a_gated_projection_transfers_to_the_gemm_with_its_epilogue_mode_and_flags() -> None:
    """sigmoid(x W^T + b) * up: the KB GEMM's modes are tried from its own problem's shapes (activation
    "sigmoid" is one of them), a `has_gate` / `has_bias` flag is on where its tensor is mapped to an input, and
    the init combinations are tried best-first by the sum of their options' ranks."""
    problem = load_problem(UNSEEN / "gated_projection")
    kernels = [k for k in KERNELS if k.family == "gemm"]
    matches = find_transfers(problem, kernels, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "gemm-bf16-linear-epilogue-reference-kernel"
    match = matches[0]
    assert match.arg_map["gate"] == ["input", "up"] and match.arg_map["w"] == ["input", "weight"]
    assert match.init_map["activation"] == ["const", "sigmoid"]
    assert match.init_map["has_gate"] == match.init_map["has_bias"] == ["const", True]


@pytest.mark.slow
def test_a_rotary_embedding_over_heads_flattened_per_token_transfers(tmp_path: Path) -> None:
    """q and k flattened per token with a partial rotary width: the KB RoPE (which takes that layout with
    head_size given) reproduces it; correct and real on every shape."""
    started_correct_and_real(UNSEEN / "flat_rotary", tmp_path / "sessions",
                             "starting point: transfer from rope-reference-kernel", "transfer from rope-reference-kernel")


@pytest.mark.slow
def test_a_rotary_embedding_with_three_position_streams_transfers(tmp_path: Path) -> None:
    """Multimodal rotary (positions [3, T], bands split in sections across the streams), q / k flattened per
    token: the KB RoPE takes the sections as its list init argument (an annotated `list[int] | None` is offered
    the problem's lists); one kernel where the compiler seed launched eleven; correct and real."""
    started_correct_and_real(UNSEEN / "sectioned_rotary", tmp_path / "sessions",
                             "starting point: transfer from rope-reference-kernel", "transfer from rope-reference-kernel")


@pytest.mark.slow
def test_a_top_p_over_the_whole_softmax_transfers_to_the_filters_second_mode(tmp_path: Path) -> None:
    """Top-p measured on the whole row's softmax (not renormalised over the top-k survivors), written with a
    sort, a cumulative sum and a scatter: the KB filter with `renormalize=False` (top-k alone, then top-p alone
    with p scaled by Z_all / Z_surv) reproduces it; correct and real."""
    started_correct_and_real(UNSEEN / "nucleus_mask", tmp_path / "sessions",
                             "starting point: transfer from sampling-top-k-top-p-reference-kernel",
                             "transfer from sampling-top-k-top-p-reference-kernel")
    proposal, _ = recorded(tmp_path / "sessions")
    kernel = (next((tmp_path / "sessions").iterdir()) / "iterations" / "0001" / "kernel.py").read_text()
    assert "'renormalize': ['const', False]" in kernel, proposal


def test_a_scaled_sum_over_routed_experts_transfers_and_a_unit_length_norm_does_not() -> None:
    """Experts' outputs summed over the top-k axis and scaled (published format, its own names) reproduce the KB's
    expert-sum kernel with the scale from the init argument; head vectors scaled to unit length (a sum of squares,
    no weight) look like an RMSNorm by name and layout but differ in value, so no norm kernel may claim them."""
    problem = load_problem(UNSEEN / "routed_output_sum")
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == "moe-sum-reduce-reference-kernel"
    assert matches[0].arg_map["x"] == ["input", "expert_out"]
    assert matches[0].init_map == {"routed_scaling_factor": ["init", "routed_scale"]}
    unit = load_problem(UNSEEN / "unit_length_heads")
    assert find_transfers(unit, KERNELS, make_probes(unit, "cpu"), default_suite_dir()) == []


@pytest.mark.parametrize("name, entry, identities", [
    ("bare_rms_rows", "rms-norm-reference-kernel", {"weight": ["ones", "states"]}),
    ("plain_layer_norm", "layer-norm-reference-kernel",
     {"weight": ["ones", "activations"], "bias": ["zeros", "activations"]})])
def test_a_norm_without_a_learned_scale_or_shift_transfers_with_identity_vectors(name: str, entry: str,
                                                                                   identities: dict) -> None:
    """A norm the KB's kernel computes with a weight (and a bias) it requires, but the problem has none of: ones
    for the scale and zeros for the shift leave the computation as the problem's, which the probes confirm; the
    adapter makes them once per size, dtype and device."""
    problem = load_problem(UNSEEN / name)
    matches = find_transfers(problem, KERNELS, make_probes(problem, "cpu"), default_suite_dir())
    assert matches and matches[0].kernel.entry_id == entry
    assert {k: v for k, v in matches[0].arg_map.items() if k in identities} == identities
    source = adapter_source(matches[0], load_modules(problem)[0].Model)
    assert "self._adapter_identity('ones', " in source


@pytest.mark.slow
def test_optimize_runs_a_layer_norm_without_affine_parameters_as_a_real_kernel(tmp_path: Path) -> None:
    started_correct_and_real(UNSEEN / "plain_layer_norm", tmp_path / "sessions",
                             "starting point: transfer from layer-norm-reference-kernel",
                             "transfer from layer-norm-reference-kernel")


def test_a_reference_holding_parameters_is_not_transferred_and_says_so_without_a_seed(tmp_path: Path) -> None:
    """The evaluator loads the reference's state dict into a candidate by name, and a transfer adapter declares
    no parameters (a transfer that mapped the scale to ones failed at the candidate's init): such a reference
    goes to the compiler seed, and without it stops with one line naming the tensors and what would help."""
    problem = load_problem(UNSEEN / "held_scale_norm")
    with pytest.raises(ProposerError, match=r"holds parameters or buffers \(scale, calls, shift.offset\).*--start FILE") \
            as caught:
        find_starting_point(problem, "cpu", "smoke", allow_seed=False)
    assert "\n" not in str(caught.value)
    own = tmp_path / "mine.py"  # a person's kernel is still taken
    shutil.copyfile(default_kb_dir() / "family" / "norm" / "fused_add_rms_norm.py", own)
    assert find_starting_point(problem, "cpu", "smoke", start_file=own).path == "person"


def test_a_reference_with_a_table_outside_its_state_dict_gets_no_transfer_and_one_line_without_a_seed() -> None:
    """A non-persistent buffer built at init (a rotary cos/sin table) is not in the state dict the evaluator gives
    a candidate: no transfer reads it, only the compiler seed builds it (test_seeded_reference_forms.py), and
    without the seed the line names it and what would help."""
    problem = load_problem(UNSEEN / "init_table_rope")
    with pytest.raises(ProposerError, match=r"not in its state dict \(cos_sin_cache\).*--start FILE") as caught:
        find_starting_point(problem, "cpu", "smoke", allow_seed=False)
    assert "\n" not in str(caught.value)
