"""Import Python files by path under unique module names, and redirect hard-coded CUDA factories."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from aka_tui.bench.problem.interpreter_bf16 import install_if_interpreting


def unique_module_name(path: Path, prefix: str) -> str:
    """A module name unique to this file path, so two problems' `reference.py` never collide."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    return f"_aka_{prefix}_{path.stem}_{digest}"


def import_file(path: Path, prefix: str) -> ModuleType:
    """Import `path` as a fresh module (re-executed on every call); exceptions propagate to the caller. Under the
    CPU interpreter, the first import that loads it also corrects its bf16 dots (`interpreter_bf16`)."""
    name = unique_module_name(path, prefix)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's @jit needs the module to be importable by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    install_if_interpreting()  # a kernel module just loaded the CPU interpreter: its bf16 dots must be right
    return module


_FACTORY_NAMES = {
    "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
    "tensor", "as_tensor", "empty_strided", "zeros_like", "ones_like", "rand_like", "randn_like",
    "randint_like", "full_like", "empty_like", "eye", "normal",
}


def _is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int)


class DeviceRedirectMode(TorchFunctionMode):
    """Rewrite `device='cuda'` in tensor factories and `.cuda()`/`.to('cuda')` to another device.

    Atrex-Bench input files hard-code `device="cuda"`; this lets them build inputs on the CPU.
    """

    def __init__(self, target: torch.device) -> None:
        super().__init__()
        self.target = target

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if self.target.type != "cuda":
            if name in _FACTORY_NAMES and _is_cuda(kwargs.get("device")):
                kwargs["device"] = self.target
            elif name == "cuda":
                return args[0].to(self.target)
            elif name == "to":
                args = tuple(self.target if _is_cuda(a) else a for a in args)
                if _is_cuda(kwargs.get("device")):
                    kwargs["device"] = self.target
        return func(*args, **kwargs)
