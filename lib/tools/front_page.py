"""The report's front page, the book's first page (:mod:`lib.tools.book`): the chapters in order with their
titles, headlines and links, and the LLM work summed over every ledger, as MyST Markdown.

Titles come from each notebook's first markdown heading and headlines from :mod:`lib.chapters` (sentences
built from the result tables), so nothing on the page is typed by hand. Ledgers are found by glob, so a new
chapter's ledger counts without a change here. The page depends only on the notebooks, tables and ledgers.
"""
from __future__ import annotations

import json
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
# ASCII punctuation that Markdown would read as markup; a backslash makes each literal (CommonMark escapes).
MARKDOWN_PUNCTUATION = "\\`*_[]<>|#"


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


def markdown_text(text: str) -> str:
    """``text`` with Markdown's markup characters escaped, so a headline is shown as written."""
    return "".join("\\" + char if char in MARKDOWN_PUNCTUATION else char for char in text)


def _cells(values: dict[str, float]) -> str:
    return " | ".join(f"{value:,.1f}" if key == "recorded_latency_s" else f"{value:,}" for key, value in values.items())


def render(chapters: list[str], notebooks: Path, built: set[str], tables: Path, ledgers: Path) -> str:
    """The page (MyST Markdown) for ``chapters`` (notebook stems, in order), titled from the notebooks in
    ``notebooks``; a chapter not in ``built`` is listed without a link."""
    items = []
    for number, chapter in enumerate(chapters, start=1):
        title = markdown_text(chapter_title(nbformat.read(notebooks / f"{chapter}.ipynb", as_version=4), chapter))
        link = f"[{title}]({chapter}.ipynb)" if chapter in built else f"{title} *(not rendered)*"
        text = headline(chapter, tables)
        shown_text = f"*{markdown_text(text)}*" if text.startswith(NO_HEADLINE) else markdown_text(text)
        items.append(f"{number}. {link}\n\n   {shown_text}")
    rows = ledger_rows(ledgers)
    totals = {key: sum(row[key] for row in rows.values()) for key in LEDGER_COLUMNS}
    body = "\n".join(f"| {markdown_text(name)} | {_cells(row)} |" for name, row in rows.items())
    return f"""# {markdown_text(TITLE)}

The chapters are executed notebooks; each headline is computed from the chapter's result tables. Code is folded:
a chapter's "show code" toggles open it, and its parameters are listed where they are set.

## Chapters

{chr(10).join(items)}

## LLM work

Summed over every ledger the notebooks saved. Recorded generation time is the sum of the request latencies
stored with the responses (parallel requests counted separately), the same in a replay.

| ledger | {" | ".join(LEDGER_COLUMNS.values())} |
|---|{"---:|" * len(LEDGER_COLUMNS)}
{body}
| **total** | {_cells(totals)} |
"""
