"""Static scan of a candidate: torch calls that compute, outside Triton kernels (informational).

Shown to the person next to the audit verdict: it points at the lines a fallback comes from, and it
flags imports of the reference and monkeypatching of timers even when no run triggers them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from aka_tui.bench.audit import ALLOWED_OPS
import aka_tui.safe_ast as safe_ast

_TORCH_ROOTS = {"torch", "F", "nn", "functional"}
_ALLOWED_CALLS = ALLOWED_OPS | {
    "empty", "empty_like", "zeros", "zeros_like", "device", "dtype", "Size", "cuda", "is_available",
    "current_device", "current_stream", "set_grad_enabled", "no_grad", "inference_mode", "manual_seed",
    "get_device_name", "synchronize", "Tensor", "Module", "Parameter", "to", "size", "dim", "stride", "numel",
    "element_size", "data_ptr", "is_contiguous", "item", "tolist", "float8_e4m3fn", "promote_types", "finfo",
    "iinfo", "cdiv", "next_power_of_2", "ModuleList", "register_buffer", "super", "__init__", "__init", "view_as",
    "storage_offset", "get_device",
}
_TENSOR_COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "addmm", "softmax", "log_softmax", "exp", "log", "sum", "mean", "max", "min", "amax",
    "amin", "pow", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "gelu", "silu", "norm", "var", "std", "cumsum",
    "topk", "sort", "argsort", "argmax", "index_select", "gather", "scatter", "scatter_add", "index_add",
    "masked_fill", "where", "clamp", "abs", "neg", "square", "mul", "add", "sub", "div", "float", "half",
    "bfloat16", "double", "einsum", "linear", "conv1d", "scaled_dot_product_attention", "layer_norm", "rms_norm",
}


@dataclass(frozen=True)
class ScanFinding:
    line: int
    kind: str  # "torch-compute" | "reference-import" | "monkeypatch" | "thread" | "stream"
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.text}"


def _is_triton_jit(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        text = ast.unparse(decorator)
        if "triton.jit" in text or text in ("jit", "triton.autotune") or "autotune" in text or "heuristics" in text:
            return True
    return False


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[ScanFinding] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if _is_triton_jit(node):
            return  # device code
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        text = ast.unparse(func)
        root = text.split(".")[0]
        attr = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
        if root in _TORCH_ROOTS and attr not in _ALLOWED_CALLS:
            if attr in ("Stream", "stream"):
                self.findings.append(ScanFinding(node.lineno, "stream", text))
            else:
                self.findings.append(ScanFinding(node.lineno, "torch-compute", text))
        elif isinstance(func, ast.Attribute) and root not in _TORCH_ROOTS and attr in _TENSOR_COMPUTE_METHODS \
                and root not in ("tl", "triton", "math", "np", "numpy", "self"):
            self.findings.append(ScanFinding(node.lineno, "torch-compute", f"{text}(...)"))
        if text in ("threading.Thread", "Thread", "concurrent.futures.ThreadPoolExecutor", "ThreadPoolExecutor"):
            self.findings.append(ScanFinding(node.lineno, "thread", text))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            text = ast.unparse(target)
            if text.startswith(("time.", "torch.", "triton.", "aka_tui.")) and isinstance(target, ast.Attribute):
                self.findings.append(ScanFinding(node.lineno, "monkeypatch", f"{text} = ..."))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if "reference" in alias.name or alias.name.startswith("aka_tui"):
                self.findings.append(ScanFinding(node.lineno, "reference-import", alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if "reference" in module or module.startswith("aka_tui"):
            self.findings.append(ScanFinding(node.lineno, "reference-import", module))


def scan_source(source: str) -> list[ScanFinding]:
    """Findings in line order; a file that does not parse yields none (the compile stage reports it)."""
    try:
        tree = safe_ast.parse(source)
    except SyntaxError:
        return []
    scanner = _Scanner()
    scanner.visit(tree)
    return sorted(scanner.findings, key=lambda f: f.line)
