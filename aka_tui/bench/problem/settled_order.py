"""A reference's unsorted top-k, settled to the sorted order before anything is compared with it.

`torch.topk(..., sorted=False)` leaves the order of its k results open: the CPU returns a partial sort's order,
a GPU another, and a kernel its own. Compared position by position, two faithful implementations (the reference
on two devices among them) disagree, and the order is not something a candidate can be asked to reproduce.
So a reference whose source takes a top-k that may be unsorted is loaded with its `Model` running that top-k
sorted, which is one of the answers torch allows: wherever the evaluator or the agent runs such a reference
(correctness cases, probes, the eager and compiled baselines), a candidate returns the k results largest first
(smallest first for `largest=False`), as for a sorted top-k. Ties within rounding stay `unsettled.py`'s.

The scan is of the source (`may_leave_topk_unsorted`): a `topk` call whose `sorted` argument is not the literal
True, or is passed by `**kwargs`. A reference without one is loaded as written, so its eager timing carries no
cost; one with it pays a torch-function mode's dispatch (about a microsecond an op) in its eager timing.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from aka_tui.bench.problem.module_loading import import_file

_WRITTEN = "_aka_as_written"  # the settled subclass's attribute holding the class it settles
_TOPK = (torch.topk, torch.Tensor.topk)
_SORTED_AT = 4  # torch.topk(input, k, dim, largest, sorted); the mode sees x.topk(k, …) with x first too
_SORTED_AT_IN_SOURCE = {"function": 4, "method": 3}  # x.topk(k, dim, largest, sorted) as written


class SortedTopK(TorchFunctionMode):
    """Every top-k called under this mode returns its results sorted."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _TOPK:
            if len(args) > _SORTED_AT:
                args = (*args[:_SORTED_AT], True, *args[_SORTED_AT + 1:])
            else:
                kwargs["sorted"] = True
        return func(*args, **kwargs)


def may_leave_topk_unsorted(source: str) -> bool:
    """Whether `source` calls a `topk` whose results may come unsorted (False for source that does not parse:
    its import fails on its own)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name != "topk":
            continue
        for keyword in node.keywords:
            if keyword.arg is None:  # **kwargs: it may hold sorted=False
                return True
            if keyword.arg == "sorted" and not _literally_true(keyword.value):
                return True
        through_torch = isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(
            func.value, ast.Name) and func.value.id == "torch")
        position = _SORTED_AT_IN_SOURCE["function" if through_torch else "method"]
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            return True
        if len(node.args) > position:
            if not _literally_true(node.args[position]):
                return True
    return False


def _literally_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def settled(model_class: Any) -> Any:
    """A subclass of the reference's `Model` whose forward (its call, for a class that is no nn.Module) runs its
    top-k calls sorted. Its state dict, parameters and name are the reference's."""
    method = "forward" if isinstance(model_class, type) and issubclass(model_class, torch.nn.Module) else "__call__"
    inner = getattr(model_class, method)

    @functools.wraps(inner)  # its signature stays the reference's (arguments are mapped by name)
    def run_sorted(self: Any, *args: Any, **kwargs: Any) -> Any:
        with SortedTopK():
            return inner(self, *args, **kwargs)

    return type(model_class.__name__, (model_class,), {method: run_sorted, "__module__": model_class.__module__,
                                                       "__qualname__": model_class.__qualname__,
                                                       _WRITTEN: model_class})


def as_written(model_class: Any) -> Any:
    """The reference's `Model` as its source defines it (itself when it was not settled): what the compiler seed
    lowers, whose graph names the forward's own arguments. The seed sorts every top-k it computes itself."""
    return model_class.__dict__.get(_WRITTEN, model_class) if isinstance(model_class, type) else model_class


def import_reference(path: Path, prefix: str) -> ModuleType:
    """The problem's reference module (`import_file`), its `Model` settled when its source may take an unsorted
    top-k."""
    module = import_file(path, prefix)
    model_class = getattr(module, "Model", None)
    if model_class is not None and may_leave_topk_unsorted(path.read_text(encoding="utf-8")):
        module.Model = settled(model_class)  # type: ignore[attr-defined]
    return module
