"""The report's front page, the book's first page (:mod:`lib.tools.book`): the chapters in order with their
titles, headlines and links, the seed systems against their verdicts (:func:`lib.verdicts.matrix`), every verdict of
the study, and the LLM work summed over every ledger, as MyST Markdown.

Titles come from each notebook's first markdown heading. A chapter's headline is its declared primary verdict
with the verdicts that qualify it (the ``verdicts`` table, :func:`lib.verdicts.headline`); a chapter without a
primary verdict shows its ``bookkeeping`` sentence (``lib.chapters.chNN.bookkeeping``, computed from its tables).
So nothing on the page is typed by hand, and no formatter here decides anything. Ledgers are found by glob, so a
new chapter's ledger counts without a change here. The page depends only on the notebooks, tables and ledgers.
"""
from __future__ import annotations

import html
import importlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd

from lib import costs, verdicts
from lib.analysis.text import count_text
from lib.verdicts import Verdict

TITLE = "LLM-as-judge evaluation for conversational assistants — a reproducible study"
NO_HEADLINE = "no verdict and no bookkeeping sentence"
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


class TableFolder(Mapping[str, pd.DataFrame]):
    """The parquet tables of a folder by name, each read when first asked for (a missing one is a KeyError)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.read: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        path = self.folder / f"{name}.parquet"
        if name not in self.read:
            if not path.exists():
                raise KeyError(name)
            self.read[name] = pd.read_parquet(path)
        return self.read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(p.stem for p in self.folder.glob("*.parquet")))

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.parquet")))


def shown(v: Verdict) -> Verdict:
    """The verdict with its text fields escaped for Markdown (the formatter adds the page's own markup)."""
    return replace(v, system=markdown_text(v.system), construct=markdown_text(v.construct),
                   statistic=markdown_text(v.statistic), unit=markdown_text(v.unit), test=markdown_text(v.test))


def headline(chapter: str, tables: Path) -> str:
    """The chapter's headline as Markdown: its primary verdict with the verdicts it depends on, else its
    ``bookkeeping`` sentence from the tables in ``tables``, else :data:`NO_HEADLINE` in italics (naming a missing
    table)."""
    found = {v.key: shown(v) for v in verdicts.records(pd.read_parquet(tables / "verdicts.parquet"))} if (
        tables / "verdicts.parquet").exists() else {}
    primary = [v for v in found.values() if v.primary and v.chapter == chapter[:2]]
    if primary:
        return verdicts.headline(primary[0], found)
    try:
        module = importlib.import_module(f"lib.chapters.ch{chapter[:2]}")
    except ModuleNotFoundError:
        return f"*{NO_HEADLINE}*"
    bookkeeping = getattr(module, "bookkeeping", None)
    if bookkeeping is None:
        return f"*{NO_HEADLINE}*"
    try:
        return markdown_text(bookkeeping(TableFolder(tables)))
    except KeyError as missing:
        return f"*{NO_HEADLINE} (missing table: {missing.args[0]})*"


def in_brief(chapter: str, tables: Path) -> str | None:
    """A chapter's "in brief" for the top of its page: its headline (:func:`headline`: the primary verdict and the
    verdicts it depends on), how many verdicts it records by outcome, and each other confirmatory one in brief
    (:func:`lib.verdicts.brief`); None when the chapter has recorded no verdict."""
    path = tables / "verdicts.parquet"
    rows = [shown(v) for v in (verdicts.records(pd.read_parquet(path)) if path.exists() else [])
            if v.chapter == chapter[:2]]
    if not rows:
        return None
    counts = ", ".join(f"{n} {word}" for word in verdicts.VERDICTS if (n := sum(v.verdict == word for v in rows)))
    flagged = {"confirmatory": sum(v.confirmatory for v in rows), "by construction": sum(v.by_construction
                                                                                          for v in rows)}
    flags = "; ".join(f"{n} {name}" for name, n in flagged.items() if n)
    in_headline = {key for v in rows if v.primary for key in (v.key, *v.depends_on)}
    confirmatory = [f"* {v.system} — {verdicts.brief(v)}" for v in rows
                    if v.confirmatory and v.key not in in_headline]
    return "\n".join([f"**In brief.** {headline(chapter, tables)}", "",
                      f"This chapter records {count_text(len(rows), 'verdict')} "
                      f"({counts}{'; ' + flags if flags else ''}); each is listed under Verdicts at its end."
                      + (" Its other confirmatory verdicts:" if confirmatory else ""),
                      *(["", *confirmatory] if confirmatory else [])])


def verdict_table(tables: Path) -> str:
    """Every verdict of the study as one Markdown table (chapter, system, what it claims to measure, check,
    verdict, evidence, flags), primary questions first; a line saying there are none before any chapter ran."""
    path = tables / "verdicts.parquet"
    rows = sorted(verdicts.records(pd.read_parquet(path)) if path.exists() else [],
                  key=lambda v: (not v.primary, v.chapter))
    if not rows:
        return "No chapter has recorded a verdict yet."
    flags = {"primary": "primary", "confirmatory": "confirmatory", "by_construction": "by construction"}
    lines = ["| chapter | system | claims to measure | check | verdict | evidence | flags |",
             "|---|---|---|---|---|---|---|"]
    for v in map(shown, rows):
        flag_text = ", ".join(word for name, word in flags.items() if getattr(v, name))
        lines.append(f"| {v.chapter} | {v.system} | {v.construct} | {v.check} | **{v.verdict}** | "
                     f"{verdicts.evidence_text(v)} | {flag_text} |")
    return "\n".join(lines)


def legend() -> str:
    """The words of :data:`lib.verdicts.VERDICTS` with their meanings, on one line."""
    return "Verdicts: " + "; ".join(f"**{word}** — {meaning}" for word, meaning in verdicts.VERDICTS.items()) + "."


def seed_matrix(tables: Path) -> str:
    """Every seed system of :data:`lib.verdicts.SEED_SYSTEMS` against its verdicts as a Markdown table
    (:func:`lib.verdicts.matrix`; a system without a row says so), then the verdict keys of no seed system with
    the reason they are left out (:func:`lib.verdicts.unassigned`)."""
    path = tables / "verdicts.parquet"
    found = verdicts.frame(map(shown, verdicts.records(pd.read_parquet(path)) if path.exists() else []))
    table = verdicts.matrix(found)
    lines = ["| seed system | chapters | verdicts | lead verdict |", "|---|---|---|---|"]
    for row in table.to_dict("records"):
        counts = ", ".join(f"{row[word]} {word}" for word in verdicts.VERDICTS if row[word])
        confirmatory = "; some confirmatory" if row["confirmatory"] else ""
        lines.append(f"| {markdown_text(row['seed system'])} | {row['chapter(s)']} | "
                     f"{row['rows']}{': ' + counts if counts else ''}{confirmatory} | {row['lead verdict']} |")
    specs: dict[str, list[str]] = {}
    for row in table.to_dict("records"):
        specs.setdefault(row["spec"], []).append(markdown_text(row["seed system"]))
    lines.append("\nTheir specifications: " + "; ".join(f"`{spec}` — {', '.join(names)}"
                                                         for spec, names in specs.items()) + ".")
    left_out = [f"{', '.join(f'`{key}`' for key in keys)}: {markdown_text(reason)}."
                for reason, keys in verdicts.unassigned(found["key"]).items()]
    return "\n".join(lines) + "".join(f"\n\nNot in the matrix: {text}" for text in left_out)


# the colours of the verdict words in the known-answer figure
VERDICT_COLOURS = {"sees": "#1b7837", "holds": "#1b7837", "blind": "#b2182b", "fails": "#b2182b",
                   "ruled out": "#762a83", "undetermined": "#878787"}
FIGURE_CHAPTERS = ("03", "05", "06", "07")  # the judges and judge-based metrics (04's rankers have their chapter)


def known_answer_figure(tables: Path, width: int = 820, row: int = 18, label_width: int = 500) -> str:
    """The study's figure: every check of a judge or a judge-based metric on a known answer (a reply, nudge or answer
    worse by construction), as its AUC with the 95% interval over the independent unit, on one axis from 0 to 1 with
    chance ± 0.1 shaded, coloured by verdict, the construct in each row's tooltip. Inline SVG (no script: the front
    page loads nothing), drawn from the ``verdicts`` table; the checks that only show a known answer is worse
    (``UNASSIGNED``) are left out. Empty when there is no such row."""
    path = tables / "verdicts.parquet"
    rows = [v for v in (verdicts.records(pd.read_parquet(path)) if path.exists() else [])
            if v.chapter in FIGURE_CHAPTERS and v.statistic.startswith("AUC") and np.isfinite(v.estimate)
            and verdicts.seed_system(v.key) is not None]
    if not rows:
        return ""
    plot = width - label_width - 20
    top, height = 24, 24 + row * len(rows) + 40

    def x(value: float) -> float:
        return round(label_width + plot * value, 1)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
             'font-family="sans-serif" font-size="11" role="img" aria-label="Known-answer checks, AUC with '
             'intervals">',
             f'<rect x="{x(0.4)}" y="{top - 6}" width="{x(0.6) - x(0.4):.1f}" height="{row * len(rows) + 6}" '
             'fill="#eeeeee"/>',
             f'<line x1="{x(0.5)}" y1="{top - 6}" x2="{x(0.5)}" y2="{top + row * len(rows)}" stroke="#999999"/>']
    for i, v in enumerate(rows):
        y = top + row * i + row / 2
        colour = VERDICT_COLOURS[v.verdict]
        label = html.escape(f"{v.chapter} · {v.system} — {v.key.split('.', 1)[1]}"[:95])
        parts.append(f"<g><title>{html.escape(v.construct)}: {v.verdict}</title>"
                     f'<text x="{label_width - 8}" y="{y + 4}" text-anchor="end">{label}</text>')
        if np.isfinite(v.ci_low) and np.isfinite(v.ci_high):
            parts.append(f'<line x1="{x(v.ci_low)}" y1="{y}" x2="{x(v.ci_high)}" y2="{y}" stroke="{colour}" '
                         'stroke-width="2"/>')
        parts.append(f'<circle cx="{x(v.estimate)}" cy="{y}" r="4" fill="{colour}"/></g>')
    axis = top + row * len(rows) + 4
    parts += [f'<line x1="{x(0)}" y1="{axis}" x2="{x(1)}" y2="{axis}" stroke="#333333"/>',
              *(f'<text x="{x(t)}" y="{axis + 14}" text-anchor="middle">{t:g}</text>' for t in (0, 0.25, 0.5, 0.75, 1)),
              f'<text x="{x(0.5)}" y="{axis + 26}" text-anchor="middle">AUC: the known-worse item scored below the '
              'real one (0.5: chance)</text>', "</svg>"]
    return "\n".join(parts)


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
    ``notebooks``; a chapter not in ``built`` is listed without a link. The cold-run records the page sums
    against the study's budget are read from ``bench`` beside ``ledgers``, as in ``outputs/``."""
    items = []
    for number, chapter in enumerate(chapters, start=1):
        title = markdown_text(chapter_title(nbformat.read(notebooks / f"{chapter}.ipynb", as_version=4), chapter))
        link = f"[{title}]({chapter}.ipynb)" if chapter in built else f"{title} *(not rendered)*"
        items.append(f"{number}. {link}\n\n   {headline(chapter, tables)}")
    rows = ledger_rows(ledgers)
    records = ledgers.parent / "bench"
    totals = {key: sum(row[key] for row in rows.values()) for key in LEDGER_COLUMNS}
    body = "\n".join(f"| {markdown_text(name)} | {_cells(row)} |" for name, row in rows.items())
    figure = known_answer_figure(tables)
    return f"""# {markdown_text(TITLE)}

The study's product is a verdict for each judge-based metric of the systems it reproduces: does it measure what it
claims? Each verdict is decided by one rule (`lib.verdicts.decide`) on known answers or human labels, with an
interval over the independent unit, and read from the `verdicts` table; the chapters are the executed notebooks
behind them (code folded: a chapter's "show code" toggles open it).

## What the study found

Each seed system, with the count of its verdicts by outcome and its lead verdict: its primary question where it has
one, else its first verdict.

{legend()}

{seed_matrix(tables)}

{"**Figure.** Every check of a judge or judge-based metric on a known answer: its AUC (the item worse by "
 "construction scored below the real one) with its 95% interval over the independent unit; the shaded band is "
 "chance ± 0.1, the colour the verdict (green sees or holds, red blind or fails, grey undetermined)." if figure else ""}

{figure}

## Chapters

Each headline is the chapter's declared primary verdict with the verdicts that qualify it.

{chr(10).join(items)}

## Every verdict

Evidence: the estimate with its 95% interval over the independent unit and the threshold of the claim.

{verdict_table(tables)}

## LLM work

Summed over every ledger the notebooks saved. Recorded generation time is the sum of the request latencies
stored with the responses (parallel requests counted separately), the same in a replay.

| ledger | {" | ".join(LEDGER_COLUMNS.values())} |
|---|{"---:|" * len(LEDGER_COLUMNS)}
{body}
| **total** | {_cells(totals)} |

{costs.cold_runs(chapters, costs.STUDY_BUDGET_MIN, records)} Each chapter's record is its latest
`make bench COLD=<chapter>`, with the measurements its `make` target runs before it; records of different days carry
the machine's day-to-day speed. {costs.warm_make_all(records)}
"""
