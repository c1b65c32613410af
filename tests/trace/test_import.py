"""Import of a synthetic Kineto-shaped GPU trace: linking, annotation vs rules, coverage, unknown kernels."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from aka_tui.errors import TraceError
from aka_tui.trace.link import build_index, link_kernels, parse_annotation
from aka_tui.trace.rules import load_rules
from aka_tui.trace.weights import ImportOptions, import_trace, select_shapes
from tests.trace.kineto import KinetoBuilder


def _write(tmp_path: Path, trace: dict, name: str = "t.json.gz") -> Path:
    path = tmp_path / name
    raw = json.dumps(trace).encode()
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    return path


def _mixed_trace() -> tuple[dict, dict[str, float]]:
    """Every link route once; returns the trace and the expected time per op (µs)."""
    b = KinetoBuilder()
    t = b.annotated_call("aka:rms_norm:llama3_8b_decode_t256_h4096", 0.0, [("void vllm::rms_norm_kernel<bf16>", 40.0)])
    t = b.annotated_call("aka:rms_norm:qwen3_32b_prefill_t4096_h5120", t, [("void vllm::rms_norm_kernel<bf16>", 10.0)])
    # annotation wins over kernel-name rules: a GEMM kernel inside an rms_norm annotation counts as rms_norm
    t = b.annotated_call("aka:rms_norm:llama3_8b_decode_t256_h4096", t, [("nvjet_tst_64x8", 5.0)])
    # rule-mapped: an unannotated aten::mm launching an nvjet GEMM; shape from the recorded input dims
    ext = b.range("cpu_op", "aten::mm", t, 50.0, [[64, 4096], [4096, 6144]])
    b.launch(t + 10.0, ext, "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", 100.0)
    t += 60.0
    # flow-only link: no runtime event, the ac2g flow start carries the launch point
    b.range("user_annotation", "aka:silu_and_mul:llama3_8b_decode_t256_i14336", t, 50.0)
    ext = b.range("cpu_op", "vllm::silu_and_mul", t + 5.0, 40.0, [[256, 28672]])
    b.launch(t + 10.0, ext, "void vllm::act_and_mul_kernel<silu>", 25.0, runtime=False)
    t += 60.0
    # External-id-only link: neither runtime nor flow, the kernel's External id names the CPU op
    b.range("user_annotation", "aka:rope:llama3_8b_decode_t256", t, 50.0)
    ext = b.range("cpu_op", "vllm::rotary_embedding", t + 5.0, 40.0, [[256, 4096]])
    b.launch(t + 10.0, ext, "void vllm::rotary_embedding_kernel<bf16>", 15.0, runtime=False, flow=False,
             correlation=False)
    t += 60.0
    # GPU-side annotation only
    b.orphan_kernel("void vllm::reshape_and_cache_flash_kernel<>", 12.0, gpu_annotation="aka:kv_cache_write:llama3_8b_decode_t256")
    # unknown kernel (no rule), launched by an unannotated aten::add
    ext = b.range("cpu_op", "aten::add", t, 30.0, [[256, 4096], [256, 4096]])
    b.launch(t + 5.0, ext, "void at::native::vectorized_elementwise_kernel<4, add>", 30.0)
    t += 40.0
    # a memcpy: mapped to the non-suite group "memcpy"
    ext = b.range("cpu_op", "aten::copy_", t, 30.0, [[1024]])
    b.launch(t + 5.0, ext, "Memcpy HtoD (Pageable -> Device)", 20.0, cat="gpu_memcpy")
    expected = {"rms_norm": 55.0, "gemm_bf16_linear_epilogue": 100.0, "silu_and_mul": 25.0, "rope": 15.0,
                "kv_cache_write": 12.0, "memcpy": 20.0}
    return b.trace(), expected


def test_kernels_link_by_correlation_flow_external_id_and_gpu_annotation() -> None:
    trace, _ = _mixed_trace()
    links = {k.name: k for k in link_kernels(build_index(trace["traceEvents"]))}
    assert links["void vllm::rms_norm_kernel<bf16>"].link == "correlation"
    assert links["void vllm::act_and_mul_kernel<silu>"].link == "flow"
    assert links["void vllm::act_and_mul_kernel<silu>"].annotation == ("silu_and_mul", "llama3_8b_decode_t256_i14336")
    assert links["void vllm::rotary_embedding_kernel<bf16>"].link == "external_id"
    assert links["void vllm::rotary_embedding_kernel<bf16>"].annotation == ("rope", "llama3_8b_decode_t256")
    assert links["void vllm::reshape_and_cache_flash_kernel<>"].link == "gpu_annotation"
    gemm = links["nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"]
    assert gemm.annotation is None and gemm.cpu_op == "aten::mm"
    assert gemm.cpu_signature == "aten::mm[64x4096,4096x6144]"


def test_import_aggregates_gpu_time_per_op_and_shape(tmp_path: Path) -> None:
    trace, expected = _mixed_trace()
    doc = import_trace(_write(tmp_path, trace), load_rules(), ImportOptions(coverage=1.0))
    total = sum(expected.values()) + 30.0  # + the unknown elementwise kernel
    assert doc["provenance"]["time_source"] == "gpu"
    assert doc["provenance"]["total_time_us"] == pytest.approx(total)
    for op, t in expected.items():
        assert doc["ops"][op]["time_us"] == pytest.approx(t), op
        assert doc["ops"][op]["importance"] == pytest.approx(100 * t / total, abs=1e-4), op
    rms = doc["ops"]["rms_norm"]
    assert rms["mapped_by"] == ["annotation"] and rms["calls"] == 3
    assert rms["shapes"]["llama3_8b_decode_t256_h4096"]["weight"] == pytest.approx(45 / 55, abs=1e-6)
    assert rms["shapes"]["qwen3_32b_prefill_t4096_h5120"]["weight"] == pytest.approx(10 / 55, abs=1e-6)
    gemm = doc["ops"]["gemm_bf16_linear_epilogue"]
    assert gemm["mapped_by"] == ["rule"] and list(gemm["shapes"]) == ["aten::mm[64x4096,4096x6144]"]
    links = doc["provenance"]["kernel_links"]
    assert links["flow"] == 1 and links["external_id"] == 1 and links["gpu_annotation"] == 1
    assert doc["provenance"]["trace_metadata"]["deviceProperties"][0]["name"] == "Synthetic H200"


def test_unknown_kernels_are_reported_with_their_share(tmp_path: Path) -> None:
    trace, expected = _mixed_trace()
    doc = import_trace(_write(tmp_path, trace), load_rules(), ImportOptions())
    total = sum(expected.values()) + 30.0
    assert [u["name"] for u in doc["unknown"]] == ["void at::native::vectorized_elementwise_kernel<4, add>"]
    assert doc["unknown"][0]["share"] == pytest.approx(30.0 / total, abs=1e-6)
    assert doc["unknown_share"] == pytest.approx(30.0 / total, abs=1e-6)
    shares = sum(o["importance"] for o in doc["ops"].values()) / 100 + doc["unknown_share"]
    assert shares == pytest.approx(1.0, abs=1e-4)  # nothing dropped


def test_user_rules_win_over_defaults_and_toml_works(tmp_path: Path) -> None:
    trace, _ = _mixed_trace()
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nop = "residual_add"\nkernel = "elementwise"\ncpu_op = "^aten::add$"\n')
    doc = import_trace(_write(tmp_path, trace), load_rules([rules]), ImportOptions())
    assert doc["unknown"] == [] and doc["ops"]["residual_add"]["time_us"] == pytest.approx(30.0)
    assert doc["provenance"]["rules"] == [str(rules), "default"]
    only = tmp_path / "only.json"
    only.write_text(json.dumps({"rules": [{"op": "norms", "kernel": "rms_norm"}]}))
    doc = import_trace(_write(tmp_path, trace), load_rules([only], defaults=False), ImportOptions())
    assert "gemm_bf16_linear_epilogue" not in doc["ops"]
    assert any("nvjet" in u["name"] for u in doc["unknown"])


@pytest.mark.parametrize("content, fragment", [
    ('{"rules": [{"kernel": "x"}]}', "needs an `op`"),
    ('{"rules": [{"op": "a"}]}', "needs `kernel` or `cpu_op`"),
    ('{"rules": [{"op": "a", "kernel": "("}]}', "bad regular expression"),
    ('{"rules": [{"op": "a", "kernal": "x"}]}', "unknown field"),
    ('{"rule": 3}', "expected a `rules` list"),
    ("{", "does not parse"),
])
def test_bad_rules_files_say_what_is_wrong(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(TraceError, match=fragment):
        load_rules([path])


def test_default_rules_map_common_serving_kernels() -> None:
    rules = load_rules()
    cases = {
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>": "fused_add_rms_norm",
        "void vllm::rms_norm_kernel<c10::BFloat16>": "rms_norm",
        "void vllm::act_and_mul_kernel<&vllm::silu_kernel>": "silu_and_mul",
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>": "rope",
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>": "attention_prefill_varlen",
        "void vllm::paged_attention_v1_kernel<bf16>": "attention_paged_decode",
        "void flash::flash_fwd_mla_kernel<>": "attention_mla_decode",
        "void vllm::moe::topk_softmax<8, 128>": "moe_topk_gating_softmax",
        "void vllm::moe::moe_align_block_size_kernel<int>": "moe_align_sort",
        "fused_moe_kernel": "moe_fused_experts",
        "void vllm::moe::moe_sum_kernel<bf16, 8>": "moe_sum_reduce",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cluster1x2x1": "gemm_bf16_linear_epilogue",
        "nvjet_tst_192x128_64x5_2x1_v_bz_coopB_TNN": "gemm_bf16_linear_epilogue",
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>": "gemm_bf16_linear_epilogue",
        "_w8a8_block_fp8_matmul": "gemm_fp8_blockscale",
        "_per_token_group_quant_fp8": "quant_fp8_per_token_group",
        "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<bf16>": "quant_fp8_per_token",
        "void vllm::reshape_and_cache_flash_kernel<bf16>": "kv_cache_write",
        "_causal_conv1d_fwd_kernel": "linear_attn_causal_conv1d",
        "fused_recurrent_gated_delta_rule_fwd_kernel": "linear_attn_gated_delta_decode",
        "top_k_top_p_sampling_from_probs_kernel": "sampling_top_k_top_p",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": "communication",
    }
    for kernel, op in cases.items():
        rule = rules.match(kernel)
        assert rule is not None and rule.op == op, (kernel, rule)
    assert rules.match("void at::native::vectorized_elementwise_kernel<4>") is None


def test_select_shapes_covers_the_share_and_respects_the_cap() -> None:
    times = {"a": 50.0, "b": 30.0, "c": 15.0, "d": 5.0}
    assert select_shapes(times, 0.9, None) == ["a", "b", "c"]
    assert select_shapes(times, 0.8, None) == ["a", "b"]
    assert select_shapes(times, 0.81, None) == ["a", "b", "c"]
    assert select_shapes(times, 1.0, None) == ["a", "b", "c", "d"]
    assert select_shapes(times, 0.9, 2) == ["a", "b"]
    assert select_shapes(times, 0.1, 5) == ["a"]


@pytest.mark.parametrize("coverage, max_shapes", [(0.9, None), (0.6, None), (0.99, 2), (0.5, 1)])
def test_kept_shapes_cover_at_least_the_share_unless_capped(tmp_path: Path, coverage: float,
                                                            max_shapes: int | None) -> None:
    b = KinetoBuilder()
    t = 0.0
    for i, dur in enumerate([400.0, 250.0, 150.0, 100.0, 60.0, 40.0]):
        t = b.annotated_call(f"aka:rope:shape{i}", t, [("void vllm::rotary_embedding_kernel", dur)])
    doc = import_trace(_write(tmp_path, b.trace()), load_rules(), ImportOptions(coverage, max_shapes))
    rope = doc["ops"]["rope"]
    kept = sum(v["weight"] for v in rope["shapes"].values())
    assert rope["covered_share"] == pytest.approx(kept, abs=1e-5)
    if max_shapes is None or len(rope["shapes"]) < max_shapes:
        assert kept >= coverage - 1e-9
        # minimal: dropping the smallest kept shape would fall below the share
        assert kept - min(v["weight"] for v in rope["shapes"].values()) < coverage
    else:
        assert len(rope["shapes"]) == max_shapes
    assert set(rope["shapes"]) | set(rope["dropped_shapes"]) == {f"shape{i}" for i in range(6)}


def test_annotation_names() -> None:
    assert parse_annotation("aka:rms_norm:llama3_8b_decode_t256_h4096") == ("rms_norm", "llama3_8b_decode_t256_h4096")
    assert parse_annotation("aka:rms_norm") == ("rms_norm", "-")
    assert parse_annotation("aka:rope:tag:with:colons") == ("rope", "tag:with:colons")
    assert parse_annotation("aka::x") is None and parse_annotation("ProfilerStep#3") is None


def test_gpu_time_source_on_a_cpu_trace_says_what_to_do(tmp_path: Path) -> None:
    b = KinetoBuilder()
    b.range("user_annotation", "aka:rope:s", 0.0, 10.0)
    with pytest.raises(TraceError, match="--time-source cpu"):
        import_trace(_write(tmp_path, b.trace()), load_rules(), ImportOptions(time_source="gpu"))
    b2 = KinetoBuilder()
    b2.range("cpu_op", "aten::add", 0.0, 10.0)
    with pytest.raises(TraceError, match="no GPU kernels and no `aka:"):
        import_trace(_write(tmp_path, b2.trace()), load_rules(), ImportOptions())


def test_nested_gpu_annotations_give_the_innermost_span() -> None:
    b = KinetoBuilder()
    start = b.gpu_clock
    b.orphan_kernel("k_inner", 10.0, gpu_annotation="aka:rope:inner")
    b.orphan_kernel("k_outer_only", 10.0)
    b.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "aka:rms_norm:outer", "pid": 0, "tid": 7,
                     "ts": start - 5.0, "dur": 100.0, "args": {}})
    b.orphan_kernel("k_after", 10.0)  # still inside the outer span
    b.orphan_kernel("k_outside", 200.0)
    b.orphan_kernel("k_far", 1.0)
    links = {k.name: k.annotation for k in link_kernels(build_index(b.trace()["traceEvents"]))}
    assert links["k_inner"] == ("rope", "inner")
    assert links["k_outer_only"] == ("rms_norm", "outer") and links["k_after"] == ("rms_norm", "outer")
    assert links["k_far"] is None
