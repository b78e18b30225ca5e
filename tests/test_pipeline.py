"""The report's front page on a temporary set of notebooks, tables and ledgers, and the chapter headlines."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lib.tools import front_page


def write_notebook(folder: Path, name: str, title: str, code: str) -> Path:
    """A chapter-shaped notebook: a heading, a ``parameters`` cell (n_points = 2) and one code cell."""
    notebook = new_notebook(cells=[
        new_markdown_cell(f"# {title}\n\nA throwaway notebook for the pipeline tests."),
        new_code_cell("n_points = 2", metadata={"tags": ["parameters"]}),
        new_code_cell(code),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def test_front_page(tmp_path: Path) -> None:
    notebooks, html, tables, ledgers = (tmp_path / d for d in ("notebooks", "html", "tables", "ledgers"))
    write_notebook(notebooks, "01_nudge_candidates", "01 · First <chapter>", "pass")
    write_notebook(notebooks, "03_judge_labeling", "03 · Labels", "pass")
    write_notebook(notebooks, "09_unregistered", "09 · Later", "pass")
    html.mkdir()
    for name in ("01_nudge_candidates", "03_judge_labeling"):
        (html / f"{name}.html").write_text("chapter")
    tables.mkdir()
    pd.DataFrame({
        "label": ["pointwise argmax", "listwise argmax"], "column": ["grade", "listwise_grade"],
        "failed": [0.0, 1.0], "n": [10.0, 9.0], "exact_agreement": [0.5, 0.4], "kappa": [0.3, 0.2],
        "weighted_kappa": [0.456, 0.123], "dataset": ["tiny set", "tiny set"], "chosen": [True, False],
    }).to_parquet(tables / "judge_validity.parquet")
    ledgers.mkdir()
    for name, calls, latency in (("01_nudge_candidates", 2, 1.25), ("05_new", 3, 2.5)):
        (ledgers / f"{name}.json").write_text(json.dumps({
            "calls": calls, "requests": calls + 1, "prompt_tokens": 1000 * calls,
            "completion_tokens": 10 * calls, "recorded_latency_s": latency, "retries": 1}))

    chapters = ["01_nudge_candidates", "03_judge_labeling", "09_unregistered"]
    page = front_page.write(chapters, notebooks, html, tables, ledgers)
    text = page.read_text()

    items = re.findall(r"<li>(.*?)</li>", text)
    assert items == [
        '<a href="01_nudge_candidates.html">01 · First &lt;chapter&gt;</a><p class="headline none">'
        "no headline registered (missing table: entries, candidates)</p>",
        '<a href="03_judge_labeling.html">03 · Labels</a><p class="headline">The label used downstream is the '
        "pointwise argmax grade: quadratic-weighted κ = 0.46 with human grades on 10 passages (tiny set), "
        "against 0.12 (listwise argmax).</p>",
        '09 · Later <span class="none">(not rendered)</span><p class="headline none">no headline registered</p>',
    ]
    assert ("<tr><td>05_new</td><td>3</td><td>4</td><td>3,000</td><td>30</td><td>2.5</td></tr>" in text)
    assert "<tfoot><tr><td>total</td><td>5</td><td>7</td><td>5,000</td><td>50</td><td>3.8</td></tr></tfoot>" in text
    assert "<script" not in text and "http" not in text
    assert front_page.write(chapters, notebooks, html, tables, ledgers).read_text() == text


def test_headlines_01_and_02_from_tables() -> None:
    from lib.headlines import HEADLINES

    entries = pd.DataFrame({"generation_ok": [True, True, False, True]})
    candidates = pd.DataFrame({"near_duplicate": [False, True, False, True, True, False]})
    assert HEADLINES["01_nudge_candidates"].sentence({"entries": entries, "candidates": candidates}) == (
        "6 candidate nudges for 4 journal entries: 3 of 4 generation calls (75%) returned a schema-valid "
        "answer, and 3 candidates are near-duplicates of an earlier one.")
    rankings = pd.DataFrame({"method": ["random"] * 4 + ["embedding"] * 2, "run": [0, 0, 1, 2, 0, 0],
                             "entry_id": ["a", "b", "a", "a", "a", "b"]})
    assert HEADLINES["02_baselines"].sentence({"rankings": rankings}) == (
        "2 ranking methods — random (3 seeds), embedding — ranked the candidate pools of 2 journal entries.")
