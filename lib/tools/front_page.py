"""The report's front page ``index.html``: the chapters in order with their titles, headlines and links, and
the LLM work summed over every ledger.

Titles come from each notebook's first markdown heading and headlines from :mod:`lib.chapters` (sentences
built from the result tables), so nothing on the page is typed by hand. Ledgers are found by glob, so a new
chapter's ledger counts without a change here. Like the chapters, the page is offline (no script, nothing
fetched) and byte-stable: it depends only on the notebooks, tables and ledgers.
"""
from __future__ import annotations

import json
from html import escape
from pathlib import Path

import nbformat
import pandas as pd

from lib.chapters import HEADLINES

TITLE = "LLM-as-judge evaluation for conversational assistants — a reproducible study"
NO_HEADLINE = "no headline registered"
# Ledger keys summed on the page, with their column headings.
LEDGER_COLUMNS = {
    "calls": "LLM calls",
    "requests": "requests",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "recorded_latency_s": "recorded generation time (s)",
}
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
li { margin-bottom: 1rem; }
.headline { margin: 0.25rem 0 0; }
.none { color: #777; font-style: italic; }
table { border-collapse: collapse; }
th, td { padding: 0.25rem 0.75rem; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tfoot td { font-weight: bold; }
"""


def chapter_title(notebook: nbformat.NotebookNode, default: str) -> str:
    """The text of the notebook's first markdown heading (``default`` if it has none): the chapter names
    itself, so the front page and the HTML title never drift from the notebook."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return default


def headline(chapter: str, tables: Path) -> str:
    """The chapter's registered headline computed from the parquet tables in ``tables``, or
    :data:`NO_HEADLINE` (naming the missing tables when one is registered but cannot be computed)."""
    entry = HEADLINES.get(chapter)
    if entry is None:
        return NO_HEADLINE
    missing = [name for name in entry.tables if not (tables / f"{name}.parquet").exists()]
    if missing:
        return f"{NO_HEADLINE} (missing table: {', '.join(missing)})"
    return entry.sentence({name: pd.read_parquet(tables / f"{name}.parquet") for name in entry.tables})


def ledger_rows(ledgers: Path) -> dict[str, dict[str, float]]:
    """``LEDGER_COLUMNS`` of every ``*.json`` ledger, by file stem in name order (a fixed summation order,
    so the float total is the same on every run)."""
    rows = {}
    for path in sorted(ledgers.glob("*.json")):
        ledger = json.loads(path.read_text())
        rows[path.stem] = {key: ledger.get(key, 0) for key in LEDGER_COLUMNS}
    return rows


def _cells(values: dict[str, float]) -> str:
    return "".join(f"<td>{value:,.1f}</td>" if key == "recorded_latency_s" else f"<td>{value:,}</td>"
                   for key, value in values.items())


def render(chapters: list[str], notebooks: Path, html: Path, tables: Path, ledgers: Path) -> str:
    """The page for ``chapters`` (notebook stems, in order); a chapter whose HTML is missing is listed
    without a link."""
    items = []
    for chapter in chapters:
        title = escape(chapter_title(nbformat.read(notebooks / f"{chapter}.ipynb", as_version=4), chapter))
        link = (f'<a href="{escape(chapter)}.html">{title}</a>' if (html / f"{chapter}.html").exists()
                else f'{title} <span class="none">(not rendered)</span>')
        text = headline(chapter, tables)
        css = ' class="headline none"' if text.startswith(NO_HEADLINE) else ' class="headline"'
        items.append(f"<li>{link}<p{css}>{escape(text)}</p></li>")
    rows = ledger_rows(ledgers)
    totals = {key: sum(row[key] for row in rows.values()) for key in LEDGER_COLUMNS}
    head = "".join(f"<th>{escape(label)}</th>" for label in LEDGER_COLUMNS.values())
    body = "\n".join(f"<tr><td>{escape(name)}</td>{_cells(row)}</tr>" for name, row in rows.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(TITLE)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{escape(TITLE)}</h1>
<p>The chapters are executed notebooks; each headline is computed from the chapter's result tables.</p>
<h2>Chapters</h2>
<ol>
{chr(10).join(items)}
</ol>
<h2>LLM work</h2>
<p>Summed over every ledger the notebooks saved. Recorded generation time is the sum of the
request latencies stored with the responses (parallel requests counted separately), the same in a replay.</p>
<table>
<thead><tr><th>ledger</th>{head}</tr></thead>
<tbody>
{body}
</tbody>
<tfoot><tr><td>total</td>{_cells(totals)}</tr></tfoot>
</table>
</body>
</html>
"""


def write(chapters: list[str], notebooks: Path, html: Path, tables: Path, ledgers: Path) -> Path:
    """Write ``index.html`` into ``html`` (see :func:`render`) and return its path."""
    page = html / "index.html"
    html.mkdir(parents=True, exist_ok=True)
    page.write_text(render(chapters, notebooks, html, tables, ledgers), encoding="utf-8")
    return page
