"""Notebooks tell, ``lib`` does: each chapter notebook keeps at most ``MAX_LOGIC_LINES`` lines that open a loop, a
branch, a comprehension, a function or a context — the rest of its code is parameters, calls, tables and figures.
Loops that build results and generated prose live in ``lib.chapters``, where they are tested."""
from __future__ import annotations

import ast
import json

import pytest

from lib import paths

MAX_LOGIC_LINES = 10
LOGIC_NODES = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.IfExp, ast.With, ast.Try, ast.FunctionDef, ast.Lambda,
               ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
NOTEBOOKS = sorted((paths.ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def logic_lines(source: str) -> set[int]:
    """Lines (of one cell) on which a loop, branch, comprehension, def, lambda, with or try starts."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    return {node.lineno for node in ast.walk(ast.parse(code)) if isinstance(node, LOGIC_NODES)}


def test_logic_lines_are_counted_per_construct():
    assert logic_lines("x = 1\nfor a in b:\n    if a:\n        y = [c for c in a]\n") == {2, 3, 4}
    assert logic_lines("%matplotlib inline\nz = f(x)\n") == set()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_keeps_its_logic_in_lib(notebook):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    per_cell = {i: len(logic_lines("".join(c["source"]))) for i, c in enumerate(cells) if c["cell_type"] == "code"}
    total = sum(per_cell.values())
    assert total <= MAX_LOGIC_LINES, f"{notebook.name}: {total} logic lines (cells: "\
        f"{ {i: n for i, n in per_cell.items() if n} }); move loops and prose into lib.chapters"
