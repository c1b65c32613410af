"""A person's kernel in the Session screen: whether a typed kernel can be evaluated, and the one a person writes
before any session has started (the offline agent's start, tuned through its TUNABLES)."""

from __future__ import annotations

import ast
from pathlib import Path

import aka_tui.safe_ast as safe_ast
from aka_tui.errors import KbEntryError


def kernel_problem(text: str) -> str:
    """Why a kernel cannot be evaluated as typed ('' when it parses and defines class Model)."""
    try:
        tree = safe_ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, on Pythons that do not call them syntax
        return safe_ast.parse_error_text(exc)
    if not any(isinstance(node, ast.ClassDef) and node.name == "Model" for node in tree.body):
        return "a candidate must define class Model (the reference's init and forward arguments)"
    return ""


def start_kernel_problem(text: str) -> str:
    """Why a kernel cannot start a session ('' when it can): evaluable, and declaring TUNABLES and SEARCH_SPACE
    (the offline agent tunes those)."""
    from aka_tui.knowledge.reference_kernels import read_tunables

    problem = kernel_problem(text)
    if problem:
        return problem
    try:
        read_tunables(text, Path("your kernel"))
    except KbEntryError as exc:
        return str(exc)
    return ""


def start_template(problem_name: str, reference_path: Path) -> str:
    """What the editor opens with: the tunables to declare, then the problem's reference (its interface)."""
    try:
        reference = reference_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reference = f"# (the reference could not be read: {exc})\n"
    return (f"# Your kernel for {problem_name}: class Model takes the reference's init and forward arguments (the\n"
            "# reference is below, as its interface and a starting point; its PyTorch forward is a fallback until a\n"
            "# Triton kernel does the work). TUNABLES and SEARCH_SPACE are dict literals: the offline agent starts\n"
            "# from TUNABLES and tunes within SEARCH_SPACE; a kernel reads them when it launches.\n"
            "TUNABLES = {\"BLOCK\": 1024}\n"
            "SEARCH_SPACE = {\"BLOCK\": [256, 512, 1024, 2048]}\n\n" + reference)
