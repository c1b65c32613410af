"""Static scan of a candidate: torch calls that compute outside Triton kernels, and code that reads the harness.

Informational findings (shown next to the audit verdict): torch compute outside kernels, imports of the reference,
threads, streams. *Suspicious* findings make the candidate `suspicious` (S = 0 until a person accepts it): code
that reaches into the evaluator instead of computing — imports of evaluator modules, frame inspection, `gc`,
`ctypes`, pipe/fd access, dynamic code and introspection that hides what runs, reads of the profiler, dispatch
and poisoning state or of clocks (ways to tell checked from timed calls), and patches of timers and libraries
(dispatcher registrations included: `torch.library.Library`, `_dispatch_library`, `torch.ops.load_library`).
Device code (`@triton.jit`, `@gluon.jit`) is scanned for the suspicious kinds too: the interpreter runs it as Python.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import aka_tui.safe_ast as safe_ast
from aka_tui.bench.measure.audit import ALLOWED_OPS

_TORCH_ROOTS = {"torch", "F", "nn", "functional"}
_ALLOWED_CALLS = ALLOWED_OPS | {
    "empty", "empty_like", "zeros", "zeros_like", "device", "dtype", "Size", "cuda", "is_available",
    "current_device", "current_stream", "set_grad_enabled", "no_grad", "inference_mode", "manual_seed",
    "get_device_name", "synchronize", "Tensor", "Module", "Parameter", "to", "size", "dim", "stride", "numel",
    "element_size", "data_ptr", "is_contiguous", "item", "tolist", "float8_e4m3fn", "promote_types", "finfo",
    "iinfo", "cdiv", "next_power_of_2", "ModuleList", "register_buffer", "super", "__init__", "__init", "view_as",
    "storage_offset", "get_device", "get_device_capability", "get_device_properties",
}
_TENSOR_COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "addmm", "softmax", "log_softmax", "exp", "log", "sum", "mean", "max", "min", "amax",
    "amin", "pow", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "gelu", "silu", "norm", "var", "std", "cumsum",
    "topk", "sort", "argsort", "argmax", "index_select", "gather", "scatter", "scatter_add", "index_add",
    "masked_fill", "where", "clamp", "abs", "neg", "square", "mul", "add", "sub", "div", "float", "half",
    "bfloat16", "double", "einsum", "linear", "conv1d", "scaled_dot_product_attention", "layer_norm", "rms_norm",
}
SUSPICIOUS_KINDS = frozenset({
    "harness-import", "frame-inspection", "memory-access", "fd-access", "dynamic-code", "introspection",
    "harness-state", "clock-read", "monkeypatch", "task-start",
})
_MODULE_KINDS = {  # imported module (root) -> kind
    "aka_tui": "harness-import", "inspect": "frame-inspection", "traceback": "frame-inspection",
    "gc": "memory-access", "ctypes": "memory-access", "mmap": "memory-access", "_ctypes": "memory-access",
    "socket": "fd-access", "fcntl": "fd-access", "multiprocessing": "fd-access", "subprocess": "fd-access",
    "importlib": "dynamic-code", "builtins": "dynamic-code", "marshal": "dynamic-code", "pickle": "dynamic-code",
    # `os` under its other names: what is held against `os.write` & co. would not be against `posix.write`
    "posix": "fd-access", "nt": "fd-access",
    # threads and processes whose work no dispatch mode of the worker's thread sees (the worker counts the starts
    # it can: raw threads and forks; an exec'd process exchanging data through files it cannot)
    "_thread": "task-start", "pty": "task-start", "_posixsubprocess": "task-start", "_multiprocessing": "task-start",
    "torch.multiprocessing": "task-start",
    # a signal handler or timer runs candidate code inside the harness's frames, between any two bytecodes
    "signal": "harness-state", "_signal": "harness-state",
}
_ATTR_KINDS = {  # attribute name read anywhere -> kind
    "_getframe": "frame-inspection", "f_back": "frame-inspection", "f_locals": "frame-inspection",
    "f_globals": "frame-inspection", "f_code": "frame-inspection", "tb_frame": "frame-inspection",
    "gi_frame": "frame-inspection", "cr_frame": "frame-inspection", "__globals__": "introspection",
    "__code__": "introspection", "__closure__": "introspection", "__subclasses__": "introspection",
    "__builtins__": "introspection", "__kwdefaults__": "introspection", "__defaults__": "introspection",
    "__self__": "introspection",  # what a builtin belongs to: `len.__self__` is the builtins module
    "_is_profiler_enabled": "harness-state", "_profiler_enabled": "harness-state",
    "_get_dispatch_mode": "harness-state", "_get_current_dispatch_mode": "harness-state",
    "_get_current_dispatch_mode_stack": "harness-state", "fill_uninitialized_memory": "harness-state",
    # whether a dispatch mode (the audit) is active: a forward that computed with its kernel only then
    # (`audit_aware_same_launches`)
    "is_in_torch_dispatch_mode": "harness-state", "_len_torch_dispatch_stack": "harness-state",
    "_get_dispatch_stack_at": "harness-state", "is_in_torch_function_mode": "harness-state",
    "_len_torch_function_stack": "harness-state",
    "are_deterministic_algorithms_enabled": "harness-state",
    "is_deterministic_algorithms_warn_only_enabled": "harness-state", "settrace": "harness-state",
    "setprofile": "harness-state", "gettrace": "harness-state", "getprofile": "harness-state",
    "addaudithook": "harness-state",  # an audit hook sees every event of the interpreter and cannot be removed
    # kernels registered with the dispatcher (an aten op's kernel replaced below Python) or loaded from a library
    "Library": "monkeypatch", "_dispatch_library": "monkeypatch", "load_library": "monkeypatch",
    # the C base of torch.Tensor: its methods (`numpy`) cannot be wrapped, so it is the way around the audit's wraps
    "TensorBase": "introspection", "_TensorBase": "introspection",
}
_CALL_KINDS = {  # dotted call -> kind
    "sys.modules": "introspection", "sys.argv": "fd-access", "os.write": "fd-access", "os.read": "fd-access",
    "os.fdopen": "fd-access", "os.dup": "fd-access", "os.dup2": "fd-access", "os.pipe": "fd-access",
    "os.open": "fd-access", "os.fstat": "fd-access", "os.lseek": "fd-access", "os.sendfile": "fd-access",
    "os.writev": "fd-access", "os.close": "fd-access", "os.kill": "fd-access", "io.FileIO": "fd-access",
    "io.open": "fd-access", "eval": "dynamic-code", "exec": "dynamic-code", "compile": "dynamic-code",
    "__import__": "dynamic-code", "globals": "introspection", "vars": "introspection",
    "time.perf_counter": "clock-read", "time.perf_counter_ns": "clock-read", "time.monotonic": "clock-read",
    "time.monotonic_ns": "clock-read", "time.time": "clock-read", "time.time_ns": "clock-read",
    "time.process_time": "clock-read", "time.thread_time": "clock-read", "time.clock_gettime": "clock-read",
    **{f"os.{name}": "task-start" for name in (
        "fork", "forkpty", "register_at_fork", "posix_spawn", "posix_spawnp", "system", "popen", "spawnl", "spawnle",
        "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe",
        "execv", "execve", "execvp", "execvpe")},
    "ProcessPoolExecutor": "task-start", "concurrent.futures.ProcessPoolExecutor": "task-start",
    "concurrent.futures.process.ProcessPoolExecutor": "task-start",
}
_RISKY_MODULES = {"os", "sys", "gc", "builtins", "ctypes", "inspect", "importlib", "io", "time"}
_PATHS = ("/proc/", "/dev/fd", "/dev/mem")
_PATCHED_ROOTS = ("time.", "torch.", "triton.", "aka_tui.", "threading.", "os.", "sys.")  # assigning into these patches
_SETTERS = ("setattr", "delattr", "object.__setattr__", "object.__delattr__", "type.__setattr__", "type.__delattr__")


@dataclass(frozen=True)
class ScanFinding:
    line: int
    kind: str  # "torch-compute" | "reference-import" | "thread" | "stream" | one of SUSPICIOUS_KINDS
    text: str

    @property
    def suspicious(self) -> bool:
        return self.kind in SUSPICIOUS_KINDS

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.text}"


def _is_triton_jit(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        text = ast.unparse(decorator)
        if "triton.jit" in text or text in ("jit", "triton.autotune", "gluon.jit") or "autotune" in text \
                or "heuristics" in text:
            return True
    return False


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound by imports (`import os as o`, `from os import write as w`) -> the dotted name they stand for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


class _Scanner(ast.NodeVisitor):
    def __init__(self, aliases: dict[str, str] | None = None) -> None:
        self.findings: list[ScanFinding] = []
        self.in_jit = 0
        self.aliases = aliases or {}

    def dotted(self, node: ast.AST) -> str:
        """The source text of a name or attribute chain with an imported alias at its root spelled out."""
        text = ast.unparse(node)
        root, _, rest = text.partition(".")
        if root in self.aliases and root.isidentifier():
            return self.aliases[root] + ("." + rest if rest else "")
        return text

    def add(self, node: ast.AST, kind: str, text: str) -> None:
        self.findings.append(ScanFinding(getattr(node, "lineno", 0), kind, text))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        jit = _is_triton_jit(node)
        self.in_jit += jit
        self.generic_visit(node)
        self.in_jit -= jit

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        text = ast.unparse(func)
        root = text.split(".")[0]
        attr = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
        resolved = self.dotted(func)
        if resolved in _CALL_KINDS:
            self.add(node, _CALL_KINDS[resolved], resolved)
        elif text == "super" and len(node.args) == 2 and self.dotted(node.args[0]).startswith("torch."):
            self.add(node, "introspection", ast.unparse(node)[:80])  # super(torch.Tensor, x): TensorBase's methods
        elif text in ("getattr", "setattr", "delattr") and node.args and \
                self.dotted(node.args[0]).split(".")[0] in _RISKY_MODULES:
            self.add(node, "dynamic-code", ast.unparse(node)[:80])
        elif text in _SETTERS and node.args and self.dotted(node.args[0]).startswith(_PATCHED_ROOTS):
            self.add(node, "monkeypatch", ast.unparse(node)[:80])  # setattr(TorchDispatchMode, "__enter__", f)
        if not self.in_jit:
            self._torch_call(node, text, root, attr)
        self.generic_visit(node)

    def _torch_call(self, node: ast.Call, text: str, root: str, attr: str) -> None:
        func = node.func
        if root in _TORCH_ROOTS and attr not in _ALLOWED_CALLS:
            self.add(node, "stream" if attr in ("Stream", "stream") else "torch-compute", text)
        elif isinstance(func, ast.Attribute) and root not in _TORCH_ROOTS and attr in _TENSOR_COMPUTE_METHODS \
                and root not in ("tl", "triton", "math", "np", "numpy", "self"):
            self.add(node, "torch-compute", f"{text}(...)")
        if text in ("threading.Thread", "Thread", "concurrent.futures.ThreadPoolExecutor", "ThreadPoolExecutor"):
            self.add(node, "thread", text)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _ATTR_KINDS:
            self.add(node, _ATTR_KINDS[node.attr], ast.unparse(node)[:80])
        elif self.dotted(node) in ("sys.modules", "sys.argv"):
            self.add(node, _CALL_KINDS[self.dotted(node)], self.dotted(node))
        elif self.dotted(node) == "torch.multiprocessing":  # reached without an import: torch imports it
            self.add(node, "task-start", "torch.multiprocessing")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(p in node.value for p in _PATHS):
            self.add(node, "fd-access", repr(node.value)[:80])

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            text = self.dotted(target)
            if text.startswith(_PATCHED_ROOTS) and isinstance(target, ast.Attribute):
                self.add(node, "monkeypatch", f"{text} = ...")
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                    and target.value.attr == "__dict__" and (self.dotted(target.value.value) + ".").startswith(
                        _PATCHED_ROOTS):  # torch.utils._python_dispatch.__dict__["_push_mode"] = ...
                self.add(node, "monkeypatch", f"{text} = ...")
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._imported(node, module)
        for alias in node.names:  # `from time import perf_counter`, `from sys import _getframe`...
            dotted = f"{module}.{alias.name}"
            if dotted in _CALL_KINDS:
                self.add(node, _CALL_KINDS[dotted], dotted)
            elif dotted in _MODULE_KINDS:  # `from torch import multiprocessing`
                self.add(node, _MODULE_KINDS[dotted], dotted)
            elif alias.name in _ATTR_KINDS:
                self.add(node, _ATTR_KINDS[alias.name], dotted)

    def _imported(self, node: ast.AST, module: str) -> None:
        prefixes = [".".join(module.split(".")[:n]) for n in range(module.count(".") + 1, 0, -1)]
        kind = next((_MODULE_KINDS[prefix] for prefix in prefixes if prefix in _MODULE_KINDS), None)
        if kind is not None:
            self.add(node, kind, module)
        elif "reference" in module:
            self.add(node, "reference-import", module)


def scan_source(source: str) -> list[ScanFinding]:
    """Findings in line order; a file that does not parse yields none (the compile stage reports it)."""
    try:
        tree = safe_ast.parse(source)
    except SyntaxError:
        return []
    scanner = _Scanner(_aliases(tree))
    scanner.visit(tree)
    return sorted(scanner.findings, key=lambda f: f.line)
