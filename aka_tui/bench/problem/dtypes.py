"""Dtype names as written in problem files, and the roofline execution path each one runs on."""

from __future__ import annotations

import torch

DTYPE_BY_NAME: dict[str, torch.dtype] = {
    "float64": torch.float64, "fp64": torch.float64, "f64": torch.float64, "double": torch.float64,
    "float32": torch.float32, "fp32": torch.float32, "f32": torch.float32, "float": torch.float32,
    "float16": torch.float16, "fp16": torch.float16, "f16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn, "fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e4m3fn": torch.float8_e4m3fn, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
    "float8_e5m2": torch.float8_e5m2, "fp8_e5m2": torch.float8_e5m2,
    # The "fnuz" encodings (no negative zero, one NaN) used by AMD GPUs and written by some references.
    "float8_e4m3fnuz": torch.float8_e4m3fnuz, "fp8_e4m3fnuz": torch.float8_e4m3fnuz,
    "float8_e5m2fnuz": torch.float8_e5m2fnuz, "fp8_e5m2fnuz": torch.float8_e5m2fnuz,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64, "long": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}
# Names of dtypes only newer PyTorch builds have (microscaling exponents, packed fp4, wide unsigned integers):
# known where the running torch defines them, so a problem using one loads wherever it can run.
for _name, _attr in (("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64"),
                     ("float8_e8m0fnu", "float8_e8m0fnu"), ("fp8_e8m0", "float8_e8m0fnu"), ("e8m0", "float8_e8m0fnu"),
                     ("float4_e2m1fn_x2", "float4_e2m1fn_x2"), ("fp4x2", "float4_e2m1fn_x2")):
    if isinstance(getattr(torch, _attr, None), torch.dtype):
        DTYPE_BY_NAME[_name] = getattr(torch, _attr)

# Roofline execution path that FLOPs of a problem with this primary dtype are charged to.
PATH_BY_DTYPE: dict[torch.dtype, str] = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16_tc",
    torch.bfloat16: "bf16_tc",
    torch.float8_e4m3fn: "fp8_tc",
    torch.float8_e5m2: "fp8_tc",
    torch.float8_e4m3fnuz: "fp8_tc",
    torch.float8_e5m2fnuz: "fp8_tc",
    torch.int8: "int8_tc",
}


def parse_dtype(name: str) -> torch.dtype:
    """Map a dtype name ('bfloat16', 'bf16', 'torch.float16', ...) to a torch dtype; KeyError if unknown."""
    key = str(name).strip().lower().removeprefix("torch.")
    return DTYPE_BY_NAME[key]


def dtype_name(dtype: torch.dtype) -> str:
    """Canonical name of a torch dtype ('bfloat16')."""
    return str(dtype).removeprefix("torch.")


def execution_path(dtype: torch.dtype) -> str:
    """Roofline path ('bf16_tc', 'fp32', ...) for a primary dtype; integer dtypes have none ('none')."""
    return PATH_BY_DTYPE.get(dtype, "none")
