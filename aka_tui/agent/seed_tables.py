"""Tables a reference builds at init outside its state dict, built the same way by a compiler seed.

A reference may compute a table in `__init__` and keep it as a non-persistent buffer (a rotary cos/sin cache):
the evaluator gives a candidate the reference's state dict only, so no candidate is handed such a table, and a
candidate must build it itself, as a person writing one would. The seed does it with the reference's own code: the
reference file is copied into the candidate as the body of a function `_seed_reference()` that returns its
`Model` (so none of its top-level names can clash with the seed's), and the candidate's `__init__` builds that
Model with the same init arguments, keeps its tables as non-persistent buffers of its own (they move with
`.to(device)` as the reference's do), and drops the rest. The tables are never computed in `forward`: the timed
work is the seed's kernels reading them.
"""

from __future__ import annotations

import ast
from pathlib import Path

TABLES_INIT = '''
        # the tables the reference builds at init outside its state dict, made by its own code
        built = dict(_seed_reference()(**self._seed_init).named_buffers())
        for i, name in enumerate(_TABLES):
            self.register_buffer(f"_seed_table_{i}", built[name], persistent=False)
'''

TABLES_METHOD = '''
    def _seed_tables(self):
        """The tables by the names the programs read them under."""
        return {"self." + name: getattr(self, f"_seed_table_{i}") for i, name in enumerate(_TABLES)}
'''


class TablesError(Exception):
    """The reference's file cannot be copied into a candidate."""


def embedded_reference(reference_path: Path, tables: list[str]) -> str:
    """`_seed_reference()`, whose body is the reference file's (its `from __future__` imports aside), and
    `_TABLES`, the buffer names the candidate keeps."""
    try:
        module = ast.parse(reference_path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise TablesError(f"the reference cannot be read as Python: {exc}") from None
    body = [s for s in module.body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]
    if any(isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names) for s in body):
        raise TablesError("the reference imports with `*`, which a function body cannot")
    body.append(ast.Return(ast.Name("Model", ast.Load())))
    function = ast.FunctionDef(name="_seed_reference", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                                          kw_defaults=[], defaults=[]),
                               body=body, decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12 on
        function.type_params = []  # type: ignore[attr-defined]
    source = ast.unparse(ast.fix_missing_locations(ast.Module([function], type_ignores=[])))
    return (f"\n\n# The reference's file: its Model builds the tables ({', '.join(tables)}) at init.\n"
            f"{source}\n\n\n_TABLES = {tuple(tables)!r}\n")
