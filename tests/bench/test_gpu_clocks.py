"""The GPU's clocks in a bench report: nvidia-smi's samples parsed, summarised, tied to the operators timed while
the clock was held down, kept through rescoring, and rendered as one line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aka_tui.bench.measure.gpu_clocks import ClockSampler, capped_ops, clocks_line, clocks_record, parse_samples
from aka_tui.bench.problem.lookup import load_suite
from aka_tui.bench.scoring.bench_report import merge_reports, rescore_report
from aka_tui.bench.scoring.report import render_markdown
from tests.conftest import PROBLEMS

ROOT = Path(__file__).resolve().parents[2]
# nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits, values as an H200 reported them on 2026-12-03
# (docs/benchmarks/2026-12-03-h200-s20/clocks-call2.csv): idle, a GEMM under the software power cap, a norm.
LINES = """\
2026/12/03 09:57:37.670, 0, 1980, 1980, 121.53, 0x0000000000000000
2026/12/03 09:57:39.674, 0, 1965, 1980, 363.90, 0x0000000000000004
2026/12/03 09:57:40.703, 0, 1575, 1980, 340.60, 0x0000000000000004
2026/12/03 09:57:41.705, 0, 1980, 1980, [N/A], 0x0000000000000000
not a sample
2026/12/03 09:58:18.766, 0, 1980, 1980, 481.96, 0x0000000000000000
"""


def _t(clock: str) -> float:
    samples = parse_samples(f"2026/12/03 {clock}, 0, 1980, 1980, 100, 0x0\n")
    return samples[0].unix


def test_samples_are_summarised_and_tied_to_the_operators_timed_while_held_down() -> None:
    samples = parse_samples(LINES)
    assert len(samples) == 5 and samples[3].power_w is None and samples[2].reasons == 0x4
    record = clocks_record(samples, {"gemm": (_t("09:57:38.000"), _t("09:57:41.000")),
                                     "norm": (_t("09:57:41.000"), _t("09:58:20.000"))})
    gpu = record["gpus"]["0"]
    assert (gpu["sm_mhz_min"], gpu["sm_mhz_max"], gpu["power_cap_samples"], gpu["slowdown_samples"]) == (1575, 1980,
                                                                                                        2, 0)
    assert record["held_down_during"] == {"gemm": 2}
    line = clocks_line(record)
    assert line is not None and "SM 1575–1980 MHz" in line and "2 of 5 samples" in line and "gemm (2)" in line
    # with two GPUs sampled, which one ran an operator is not known here: no attribution
    two = samples + parse_samples(LINES.replace(", 0, ", ", 1, "))
    assert capped_ops(two, {"gemm": (0.0, 2e9)}) == {} and set(clocks_record(two, {})["gpus"]) == {"0", "1"}
    assert clocks_record([], {}) == {} and clocks_line({}) is None


def test_the_record_survives_rescoring_and_is_rendered(tmp_path: Path) -> None:
    data = json.loads((ROOT / "docs/benchmarks/2026-12-03-h200-s20/sampling.json").read_text())
    report = rescore_report(data, load_suite(PROBLEMS))
    assert report.gpu_clocks == {} and "GPU clocks" not in render_markdown(report)
    data["gpu_clocks"] = clocks_record(parse_samples(LINES), {})
    again = rescore_report(data, load_suite(PROBLEMS))
    assert again.gpu_clocks == data["gpu_clocks"] and again.to_json()["gpu_clocks"] == data["gpu_clocks"]
    assert "- GPU clocks (nvidia-smi, sampled through the run): GPU 0: SM 1575–1980 MHz" in render_markdown(again)
    merged = merge_reports([again, report])  # each source keeps its own clocks; the merge has none of its own
    assert merged.gpu_clocks == {} and merged.merged_from[0]["gpu_clocks"] == data["gpu_clocks"]


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for nvidia-smi")
def test_the_sampler_runs_nvidia_smi_for_the_block_and_parses_what_it_wrote(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for the tool: it checks the query it is given, then prints a sample every 50 ms until stopped.
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\ncase \"$1\" in --query-gpu=timestamp,index,clocks.sm*) ;; *) exit 3;; esac\n"
                    "while true; do echo \"$(date '+%Y/%m/%d %H:%M:%S.000'), 0, 1755, 1980, 500.0, 0x4\";"
                    " sleep 0.05; done\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    import time

    with ClockSampler(interval_ms=50) as sampler:
        time.sleep(0.5)
    assert len(sampler.samples) >= 3 and all(s.sm_mhz == 1755 and s.reasons == 0x4 for s in sampler.samples)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with ClockSampler() as nothing:
        pass
    assert nothing.samples == []
