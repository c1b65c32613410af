"""Loading the shipped suite and rejecting malformed problem directories with one clear error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.bench.problem.model import FAMILIES
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.errors import ProblemFormatError
from tests.conftest import DATA, PROBLEMS

REQUIRED_FAMILIES = {"attention", "moe", "gemm", "norm", "activation", "rope", "quantization", "kv_cache",
                     "sampling", "linear_attention"}


def test_shipped_suite_loads_and_covers_the_families() -> None:
    suite = load_suite(PROBLEMS)
    assert not suite.errors, suite.errors
    assert len(suite.problems) >= 20
    assert {p.family for p in suite.problems.values()} >= REQUIRED_FAMILIES
    for problem in suite.problems.values():
        assert problem.family in FAMILIES
        assert problem.shapes_for("smoke"), f"{problem.name} has no smoke shapes"
        assert problem.shapes_for("full"), f"{problem.name} has no full shapes"
        assert problem.importance > 0 and problem.importance_provenance
        assert problem.fuzz, f"{problem.name} declares no fuzz domain"
        for tier in ("smoke", "full"):
            assert abs(sum(s.weight for s in problem.shapes_for(tier)) - 1.0) < 1e-9
        for shape in problem.shapes_for("smoke"):
            assert shape.dtype != torch.bfloat16, f"{problem.name}:{shape.shape_id}: bf16 breaks the interpreter"


def test_every_shipped_problem_has_a_cached_roofline_for_every_shape() -> None:
    for problem in load_suite(PROBLEMS).problems.values():
        missing = [s for s in problem.shapes if s not in problem.roofline]
        assert not missing, f"{problem.name}: no cached roofline for {missing} (run aka roofline {problem.name})"


@pytest.fixture()
def good_problem(tmp_path: Path) -> Path:
    target = tmp_path / "rms_norm"
    shutil.copytree(PROBLEMS / "rms_norm", target, ignore=shutil.ignore_patterns("solutions", "__pycache__"))
    return target


def _assert_clear(directory: Path, *fragments: str) -> None:
    with pytest.raises(ProblemFormatError) as info:
        load_problem(directory)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_missing_file(good_problem: Path) -> None:
    (good_problem / "input.py").unlink()
    _assert_clear(good_problem, "rms_norm", "input.py", "missing")


def test_no_model_class(good_problem: Path) -> None:
    (good_problem / "reference.py").write_text("import torch\n\nclass Reference(torch.nn.Module):\n    pass\n")
    _assert_clear(good_problem, "rms_norm", "reference.py", "Model")


def test_reference_syntax_error(good_problem: Path) -> None:
    (good_problem / "reference.py").write_text("class Model(:\n")
    _assert_clear(good_problem, "reference.py", "syntax error")


@pytest.mark.parametrize("name, content, fragment", [("reference.py", b"\x88\xa0 binary", "not UTF-8"),
                                                     ("reference.py", b"import torch\x00\n", "null bytes"),
                                                     ("shapes.json", b"{\"0\": \xff}", "not UTF-8")])
def test_files_that_are_not_text_are_one_line(good_problem: Path, name: str, content: bytes, fragment: str) -> None:
    (good_problem / name).write_bytes(content)
    _assert_clear(good_problem, name, fragment)


def test_shapes_not_an_object(good_problem: Path) -> None:
    (good_problem / "shapes.json").write_text("[1, 2, 3]")
    _assert_clear(good_problem, "rms_norm", "shapes.json", "object")


def test_shapes_invalid_json(good_problem: Path) -> None:
    (good_problem / "shapes.json").write_text("{\"a\": ")
    _assert_clear(good_problem, "shapes.json", "invalid JSON")


def test_unknown_dtype(good_problem: Path) -> None:
    meta = json.loads((good_problem / "problem.json").read_text())
    meta["dtype"] = "float7"
    (good_problem / "problem.json").write_text(json.dumps(meta))
    _assert_clear(good_problem, "rms_norm", "problem.json", "float7")


@pytest.mark.parametrize("name, dtype", [("bool", torch.bool), ("uint8", torch.uint8), ("int16", torch.int16),
                                         ("torch.bool", torch.bool), ("UINT8", torch.uint8),
                                         ("double", torch.float64), ("fp8_e4m3fn", torch.float8_e4m3fn)])
def test_mask_and_byte_dtypes_are_known(name: str, dtype: torch.dtype) -> None:
    from aka_tui.bench.problem.dtypes import parse_dtype

    assert parse_dtype(name) == dtype


def test_dtypes_of_newer_torch_builds_are_known_where_torch_has_them() -> None:
    from aka_tui.bench.problem.dtypes import parse_dtype

    for name, attr in (("uint32", "uint32"), ("float8_e8m0fnu", "float8_e8m0fnu"), ("fp4x2", "float4_e2m1fn_x2")):
        expected = getattr(torch, attr, None)
        if isinstance(expected, torch.dtype):
            assert parse_dtype(name) == expected
        else:
            with pytest.raises(KeyError):
                parse_dtype(name)


def test_unknown_dtype_in_a_shape(good_problem: Path) -> None:
    shapes = json.loads((good_problem / "shapes.json").read_text())
    next(iter(shapes.values()))["input_kwargs"]["dtype"] = "bfloat17"
    (good_problem / "shapes.json").write_text(json.dumps(shapes))
    _assert_clear(good_problem, "shapes.json", "bfloat17")


def test_make_inputs_returning_a_non_dict(good_problem: Path) -> None:
    (good_problem / "input.py").write_text(
        "import torch\n\ndef _make_inputs(num_tokens, hidden_size, dtype='float16', device='cpu'):\n"
        "    return [torch.randn(num_tokens, hidden_size)]\n")
    problem = load_problem(good_problem)
    module = import_file(problem.input_path, "inp")
    with pytest.raises(ProblemFormatError) as info:
        make_inputs(problem, module, problem.shapes_for("smoke")[0], "cpu", 0)
    assert "input.py" in str(info.value) and "list" in str(info.value) and "rms_norm" in str(info.value)


def test_not_a_problem_directory(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    with pytest.raises(ProblemFormatError, match="neither problem.json"):
        load_problem(tmp_path / "x")


def test_suite_collects_bad_problems_without_failing(tmp_path: Path, good_problem: Path) -> None:
    bad = tmp_path / "broken_op"
    bad.mkdir()
    (bad / "problem.json").write_text("{}")
    suite = load_suite(tmp_path)
    assert "rms_norm" in suite.problems
    assert "broken_op" in suite.errors


def test_atrex_layout_loads_with_importance_and_roofline() -> None:
    problem = load_problem(DATA / "atrex_suite" / "swish_scale")
    assert problem.source_format == "atrex"
    assert problem.dtype == torch.float32
    assert problem.importance == pytest.approx(0.42)
    assert problem.roofline["r5_c300"].flops == 6000 and problem.roofline["r5_c300"].bytes_total == 12000
    # Atrex input files hard-code device="cuda": the loader builds them on the CPU here.
    module = import_file(problem.input_path, "inp")
    inputs = make_inputs(problem, module, problem.shapes["r5_c300"], "cpu", 0)
    assert inputs["x"].device.type == "cpu" and inputs["x"].shape == (5, 300)


def test_seeded_inputs_are_reproducible() -> None:
    problem = load_problem(PROBLEMS / "attention_paged_decode")
    module = import_file(problem.input_path, "inp")
    shape = problem.shapes_for("smoke")[0]
    a = make_inputs(problem, module, shape, "cpu", 123)
    b = make_inputs(problem, module, shape, "cpu", 123)
    c = make_inputs(problem, module, shape, "cpu", 124)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a if a[k].is_floating_point())
