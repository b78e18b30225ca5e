"""Chapter 07's report card: every judge against human labels in one table, each number beside its published
anchor, and the threats to validity written from the measured numbers.

* ``ANCHORS`` — the published numbers a reader compares with, one declarative :class:`Anchor` each, with its
  source and whether the value was checked in the paper itself (``checked_in_paper``); the chapter marks the
  unchecked ones.
* :func:`agreement_rows`, :func:`protocol_rows`, :func:`correlation_rows` — card rows from
  :func:`lib.analysis.validity.relevance_agreement`, :func:`lib.analysis.validity.geval_protocol` and
  :func:`lib.analysis.validity.correlation_table` (chapters 05 and 06 summarised with their CIs);
  :func:`report_card` stacks them and puts the anchors beside them (:func:`with_anchors`, which also serves the
  bias battery's table).
* :func:`level_rows` — chapter 06's conversation judge against a CRS metric at four levels (pooled, without the
  echo, within systems, system means).
* :func:`monitor_rows` — chapter 05's nightly monitor as a card row: does the judge's daily score separate
  the day a broken release was served from the normal days?
* ``TARGETS`` — the values the chapter's issue asks the declared readings to reach (the forest plots' target
  lines; the verdicts themselves are chapter 07's findings, :func:`lib.chapters.ch07.findings`).
* :func:`threats_to_validity` — Markdown generated from the card, the bias battery's verdicts and the sizes.

Card columns (``CARD_COLUMNS``): judge (judge and method, e.g. "G-Eval, study steps, weighted"), model (the judge
model's identity; "—" for a non-LLM baseline), dataset, criterion (SummEval dimension, "relevance", a CRS
metric, …), statistic (``STATISTICS``), level (item, summary, system), n, value, ci_low, ci_high (95 %,
bootstrap), ci_over (what the bootstrap resampled, e.g. "4 documents": a system-level ρ rests on 16 systems but its
interval only on the documents drawn), failed (items without a judgment).

The notebook's plan (split sizes, reused cache, order of operations) is in ``lib/analysis/CHAPTER07.md``.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib.analysis.names import (
    ALPHA,
    BINARY_KAPPA,
    DRIFT,
    EXPECTED_RHO,
    EXPECTED_RHO_WITHIN,
    KAPPA,
    KENDALL,
    MARGIN,
    POSITION_CONSISTENCY,
    SPEARMAN,
    STATISTICS,
    WEIGHTED_KAPPA,
)
from lib.analysis.stats import MIN_CI_UNITS
from lib.analysis.text import interval_text, number_text
from lib.analysis.validity import relevance_agreement
from lib.llm.server import describe_model
from lib.verdicts import Claim, Verdict, decide

CARD_COLUMNS = ("judge", "model", "dataset", "criterion", "statistic", "level", "n", "value", "ci_low", "ci_high",
                "ci_over", "failed")

# Judge names the targets and the headline look up: the relevance reading declared primary before the run carries
# CHOSEN after its name; GEVAL_WEIGHTED is G-Eval as declared before the run (study steps, probability-weighted).
CHOSEN = " (declared primary)"
GEVAL_WEIGHTED = "G-Eval, study steps, weighted"
GEVAL_ARGMAX = "G-Eval, study steps, argmax digit (ablation)"
ROUGE_BASELINE = "ROUGE-1 F to the reference"
COSINE_BASELINE = "MiniLM cosine to the source"
COEFFICIENT_NAMES = {"spearman": SPEARMAN, "kendall": KENDALL}

GEVAL_PAPER = "Liu et al., G-Eval, EMNLP 2023, Table 1 (summary level)"
UMBRELA_PAPER = "Upadhyay et al., UMBRELA, arXiv:2406.06519 (2024)"
LLMJUDGE_PAPER = "Rahmani et al., LLMJudge challenge, LLM4Eval @ SIGIR 2024, arXiv:2408.08896"
MTBENCH_PAPER = "Zheng et al., Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena, NeurIPS 2023, Table 2"
VOORHEES_PAPER = ("Voorhees, Variations in relevance judgments and the measurement of retrieval effectiveness, "
                  "IP&M 36(5), 2000")


@dataclass(frozen=True)
class Anchor:
    """A published number: which ``judge`` (family and model) scored ``value`` (``upper``: the top of a reported
    range) of ``statistic`` at ``level`` on ``measured_on``; it is shown beside the card rows of ``shown_with``
    (our data set; None: any) and ``criterion``. ``checked_in_paper`` is True only when the value was read in
    the paper's own text; ``note`` says what is known about it otherwise."""

    judge: str
    measured_on: str
    shown_with: str | None
    criterion: str
    statistic: str
    level: str
    value: float
    source: str
    checked_in_paper: bool
    upper: float | None = None
    note: str = ""

    def text(self) -> str:
        """"judge value (source)", the value a range when ``upper`` is set, with a * when not checked."""
        value = f"{self.value:.3f}" if self.upper is None else f"{self.value:.2f}–{self.upper:.2f}"
        return f"{self.judge} {value}{'' if self.checked_in_paper else '*'} ({self.source.split(',')[0]})"


def _geval(judge: str, criterion: str, rho: float, tau: float | None, checked_rho: bool = False, note: str = ""
           ) -> list[Anchor]:
    anchor = functools.partial(Anchor, judge=judge, measured_on="SummEval (G-Eval's file)", shown_with="SummEval",
                               criterion=criterion, level="summary", source=GEVAL_PAPER, note=note)
    anchors = [anchor(statistic=SPEARMAN, value=rho, checked_in_paper=checked_rho)]
    if tau is not None:
        anchors.append(anchor(statistic=KENDALL, value=tau, checked_in_paper=False))
    return anchors


_FLUENCY_NOTE = ("the study's transcription in data/human_judgments/summeval_geval/SOURCE.md reads .506/.455 for this "
                 "cell; versions of the paper may differ")
_ISSUE_NOTE = "as given in the chapter's issue; not read in the paper's own text here"
_TABLE_NOTE = ("Table 1 as transcribed in data/human_judgments/summeval_geval/SOURCE.md from a text copy of the "
               "paper")
_TRANSCRIPTION_NOTE = ("the ablation rows (-Probs, -CoT) of Table 1 as transcribed in data/human_judgments/"
                       "summeval_geval/SOURCE.md from a text copy of the paper; G-Eval-4 sampled 20 scores at "
                       "temperature 1 rather than weighting logprobs, and the paper's AVG is not the plain mean of "
                       "its four columns")

ANCHORS: tuple[Anchor, ...] = (
    *_geval("G-Eval (GPT-4)", "coherence", 0.582, 0.457, note=_ISSUE_NOTE),
    *_geval("G-Eval (GPT-3.5)", "coherence", 0.440, 0.335, note=_TABLE_NOTE),
    *_geval("G-Eval (GPT-3.5), argmax (no probabilities)", "coherence", 0.359, 0.313, note=_TABLE_NOTE),
    *_geval("ROUGE-1", "coherence", 0.167, 0.126, note=_TABLE_NOTE),
    *_geval("G-Eval (GPT-4)", "consistency", 0.507, 0.425, note=_ISSUE_NOTE),
    *_geval("G-Eval (GPT-4)", "fluency", 0.455, 0.378, note=_FLUENCY_NOTE),
    *_geval("G-Eval (GPT-4)", "relevance", 0.547, 0.433, note=_ISSUE_NOTE),
    *_geval("G-Eval (GPT-4)", "average", 0.514, 0.418, checked_rho=True,
            note="ρ = 0.514 is stated in the paper's abstract; τ as given in the issue"),
    *_geval("G-Eval (GPT-3.5)", "average", 0.401, 0.320, note=_ISSUE_NOTE),
    *_geval("G-Eval (GPT-3.5), argmax (no probabilities)", "average", 0.346, None, note=_ISSUE_NOTE),
    *_geval("G-Eval (GPT-4), without probabilities", "average", 0.502, 0.446, note=_TRANSCRIPTION_NOTE),
    *_geval("G-Eval (GPT-4), without CoT steps", "average", 0.500, 0.407, note=_TRANSCRIPTION_NOTE),
    *_geval("ROUGE-1", "average", 0.192, 0.150, note=_ISSUE_NOTE),
    Anchor("UMBRELA (GPT-4o)", "TREC DL 2019–2023", "TREC DL19", "relevance", KAPPA, "item", 0.31, UMBRELA_PAPER,
           False, upper=0.37, note=_ISSUE_NOTE),
    Anchor("LLMJudge best (GPT-4o)", "TREC DL 2023 (LLMJudge)", "TREC DL19", "relevance", KAPPA, "item", 0.286,
           LLMJUDGE_PAPER, False, note=_ISSUE_NOTE),
    Anchor("LLMJudge zero-shot Llama-3-8B", "TREC DL 2023 (LLMJudge)", "TREC DL19", "relevance", KAPPA, "item",
           0.18, LLMJUDGE_PAPER, False, note=_ISSUE_NOTE + " (≈)"),
    Anchor("LLMJudge best", "TREC DL 2023 (LLMJudge)", "TREC DL19", "relevance", BINARY_KAPPA, "item", 0.428,
           LLMJUDGE_PAPER, False, note=_ISSUE_NOTE),
    Anchor("LLMJudge submissions", "TREC DL 2023 (LLMJudge)", "TREC DL19", "relevance", KENDALL, "system", 0.90,
           LLMJUDGE_PAPER, False, upper=0.95, note=_ISSUE_NOTE + "; system rankings under the LLM labels"),
    Anchor("two trained TREC assessor groups", "TREC ad hoc (Voorhees)", "TREC DL19", "relevance", BINARY_KAPPA,
           "item", 0.52, VOORHEES_PAPER, False,
           note="human ceiling as given in the issue (≈); the paper is known for overlap of relevant sets, the κ "
                "value was not checked"),
    Anchor("MT-Bench judge GPT-4", "MT-Bench pairs", None, "pairwise", POSITION_CONSISTENCY, "item", 0.65,
           MTBENCH_PAPER, False, note=_ISSUE_NOTE),
    Anchor("MT-Bench judge GPT-3.5", "MT-Bench pairs", None, "pairwise", POSITION_CONSISTENCY, "item", 0.46,
           MTBENCH_PAPER, False, note=_ISSUE_NOTE),
)


def anchors_table(anchors: Sequence[Anchor] = ANCHORS) -> pd.DataFrame:
    """The registry as a table (one row per anchor), for the chapter's list of sources."""
    return pd.DataFrame([a.__dict__ for a in anchors])


def _matching(row: Mapping, anchors: Sequence[Anchor]) -> list[Anchor]:
    """The anchors of the row's criterion, statistic and level shown with its data set (or with any)."""
    return [a for a in anchors if a.shown_with in (None, row["dataset"]) and a.criterion == row["criterion"]
            and a.statistic == row["statistic"] and a.level == row["level"]]


def with_anchors(table: pd.DataFrame, anchors: Sequence[Anchor] = ANCHORS) -> pd.DataFrame:
    """``table`` (columns dataset, criterion, statistic, level) with ``anchors`` (the texts of every anchor of
    the same criterion, statistic and level shown with the row's data set, "; "-joined, "—" when none) and
    ``anchor_unchecked`` (some of them not checked in the paper)."""
    found = table.apply(_matching, axis=1, anchors=anchors) if len(table) else pd.Series(dtype=object)
    return table.assign(anchors=[("; ".join(a.text() for a in m) or "—") for m in found],
                        anchor_unchecked=[any(not a.checked_in_paper for a in m) for m in found])


def judge_kind(card: pd.DataFrame) -> pd.Series:
    """Per card row, "non-LLM baseline" or "LLM judge (<model description>)" (:func:`lib.llm.server.describe_model`)."""
    return card["model"].map(lambda m: "non-LLM baseline" if m == "—" else f"LLM judge ({describe_model(m)})")


def forest_rows(table: pd.DataFrame, label: Sequence[str], group: str | pd.Series, anchors: Sequence[Anchor] = ANCHORS
                ) -> pd.DataFrame:
    """The rows of a card or bias table as :func:`lib.plots.interval_forest` draws them: label (the ``label``
    columns joined by " · "), group (column ``group``, or a series such as :func:`judge_kind`), value, CI, and
    anchor (the first matching anchor's value, the middle of a range; NaN when none)."""
    def anchor_value(row: pd.Series) -> float:
        found = _matching(row, anchors)
        if not found:
            return float("nan")
        first = found[0]
        return first.value if first.upper is None else (first.value + first.upper) / 2

    groups = table[group] if isinstance(group, str) else group
    return pd.DataFrame({"label": table[list(label)].astype(str).agg(" · ".join, axis=1), "group": groups,
                         "value": table["value"], "ci_low": table["ci_low"], "ci_high": table["ci_high"],
                         "anchor": table.apply(anchor_value, axis=1) if len(table) else []}).reset_index(drop=True)


def _row(judge: str, model: str, dataset: str, criterion: str, statistic: str, level: str, n: float, value: float,
         ci_low: float, ci_high: float, ci_over: str, failed: float = 0) -> dict[str, object]:
    return dict(zip(CARD_COLUMNS, (judge, model, dataset, criterion, statistic, level, n, value, ci_low, ci_high,
                                   ci_over, failed), strict=True))


def _units(n: float, unit: str) -> str:
    """``ci_over`` text: "24 passages", "1 document", "6 queries"."""
    plural = unit[:-1] + "ies" if unit.endswith("ry") else unit + "s"
    return f"{int(n)} {unit if int(n) == 1 else plural}"


def agreement_rows(agreement: Mapping[str, float], judge: str, model: str, dataset: str,
                   criterion: str = "relevance") -> list[dict[str, object]]:
    """Card rows of one :func:`lib.analysis.validity.relevance_agreement` result: κ, quadratic-weighted κ,
    binarised κ, Krippendorff's α and (when present) Spearman's ρ of the expected grade, pooled and within
    queries (n = queries kept), item level; every interval resampled the queries."""
    a = agreement
    common = (judge, model, dataset, criterion)
    over = _units(a["units"], "query")
    rows = [_row(*common, KAPPA, "item", a["n"], a["kappa"], a["kappa_ci_low"], a["kappa_ci_high"], over, a["failed"]),
            _row(*common, WEIGHTED_KAPPA, "item", a["n"], a["weighted_kappa"], a["weighted_kappa_ci_low"],
                 a["weighted_kappa_ci_high"], over, a["failed"]),
            _row(*common, BINARY_KAPPA, "item", a["n"], a["binary_kappa"], a["binary_kappa_ci_low"],
                 a["binary_kappa_ci_high"], over, a["failed"]),
            _row(*common, ALPHA, "item", a["n"], a["alpha"], a["alpha_ci_low"], a["alpha_ci_high"], over, a["failed"])]
    if "expected_rho" in a:
        rows.append(_row(*common, EXPECTED_RHO, "item", a["expected_n"], a["expected_rho"], a["expected_rho_ci_low"],
                         a["expected_rho_ci_high"], over, a["failed"]))
        rows.append(_row(*common, EXPECTED_RHO_WITHIN, "item", a["expected_groups"], a["expected_rho_within"],
                         a["expected_rho_within_ci_low"], a["expected_rho_within_ci_high"],
                         _units(a["expected_groups"], "query"), a["failed"]))
    return rows


def protocol_rows(protocol: pd.DataFrame, judge: str, model: str, dataset: str, failed: int = 0
                  ) -> list[dict[str, object]]:
    """Card rows of one :func:`lib.analysis.validity.geval_protocol` table (one per dimension, level and
    coefficient; n = documents kept at summary level, systems at system level; both CIs resample the documents)."""
    return [_row(judge, model, dataset, r.dimension, COEFFICIENT_NAMES[r.coefficient], r.level, r.n, r.value,
                 r.ci_low, r.ci_high, _units(r.documents, "document"), failed) for r in protocol.itertuples()]


def correlation_rows(table: pd.DataFrame, judge: str, model: str, dataset: str, level: str, group: str = "all",
                     failed: int = 0) -> list[dict[str, object]]:
    """Card rows of the ``group`` rows of a :func:`lib.analysis.validity.correlation_table` (index by, score,
    method): one per score column and coefficient, the score column as the criterion (n: the pairs, units named
    by ``level``; ci_over: the independent units the interval resampled)."""
    part = table.xs(group, level=0)
    return [_row(judge, model, dataset, str(score), COEFFICIENT_NAMES[method], level, r["n"], r["r"], r["ci_low"],
                 r["ci_high"], r["ci_over"], failed) for (score, method), r in part.iterrows()]


def level_rows(levels: pd.DataFrame, judge: str, model: str, dataset: str, criterion: str, failed: int = 0
               ) -> list[dict[str, object]]:
    """Card rows (Spearman ρ) of a :func:`lib.crs.summaries.judge_levels` table: the pooled sessions, the sessions
    without the degenerate system and within systems are levels "session", "session, without …" and
    "session, within systems"; the system means are level "system" (their CI resamples the systems' mean pairs)."""
    names = {"pooled": "session", "within systems": "session, within systems", "system level": "system"}
    return [_row(judge, model, dataset, criterion, SPEARMAN, names.get(level, f"session, {level}"), r["n"], r["r"],
                 r["ci_low"], r["ci_high"], r["ci_over"], failed) for level, r in levels.iterrows()]


def drift_rows(drift: pd.DataFrame, judge: str, model: str, dataset: str) -> list[dict[str, object]]:
    """Card rows of a :func:`lib.judges.drift.drift_table`: per rerun, the mean absolute change of E[g] between
    the study's run and the rerun (level "item", criterion the rerun), with its interval over queries."""
    return [_row(judge, model, dataset, str(r["rerun"]), DRIFT, "item", r["items"], r["mean_abs_change"],
                 r["ci_low"], r["ci_high"], r["ci_over"]) for r in drift.to_dict("records")]


def monitor_rows(days: pd.DataFrame, judge: str, model: str, dataset: str, score: str = "overall"
                 ) -> list[dict[str, object]]:
    """One card row from a ``monitor_days`` table: the separation margin min(``score`` on the normal days) −
    ``score`` on the degraded day (> 0: some alert threshold flags the degraded day and no other), over n =
    days. A single degraded day gives nothing to resample, so the CI is undefined (NaN)."""
    degraded, normal = days[days["degraded"]], days[~days["degraded"]]
    if len(degraded) != 1 or normal.empty:
        raise ValueError(f"monitor_days: {len(degraded)} degraded day(s) and {len(normal)} normal ones; need 1 and ≥ 1")
    margin = float(normal[score].min() - degraded[score].iloc[0])
    failed = int(days["failed"].sum()) if "failed" in days else 0
    return [_row(judge, model, dataset, score, MARGIN, "day", len(days), margin, float("nan"), float("nan"), "—",
                 failed)]


def report_card(rows: Sequence[Mapping[str, object]], anchors: Sequence[Anchor] = ANCHORS) -> pd.DataFrame:
    """The one table: every card row (``CARD_COLUMNS``) with its anchors beside it (:func:`with_anchors`). An
    interval that resampled fewer than ``MIN_CI_UNITS`` units is set undefined (NaN): a percentile bootstrap over
    k units takes at most C(2k−1, k) distinct values (35 for 4 documents) and under-covers badly, so it would
    look like evidence it is not; ``ci_over`` still says how many units there were."""
    card = pd.DataFrame(list(rows), columns=list(CARD_COLUMNS))
    unknown = sorted(set(card.statistic) - set(STATISTICS))
    if unknown:
        raise ValueError(f"unknown statistic(s) {unknown}; use one of STATISTICS")
    units = card["ci_over"].map(resampled_units)
    card.loc[units.notna() & (units < MIN_CI_UNITS), ["ci_low", "ci_high"]] = np.nan
    return with_anchors(card, anchors)


@dataclass(frozen=True)
class Target:
    """A value the chapter's issue asks a declared reading to reach: the card row of dataset, criterion,
    statistic and level whose judge name ends with ``judge``."""

    what: str
    judge: str
    dataset: str
    criterion: str
    statistic: str
    level: str
    value: float


TARGETS: tuple[Target, ...] = (
    Target("relevance labels on TREC DL19", CHOSEN, "TREC DL19", "relevance", WEIGHTED_KAPPA, "item", 0.40),
    Target("G-Eval on SummEval, coherence", GEVAL_WEIGHTED, "SummEval", "coherence", SPEARMAN, "summary", 0.30),
)


def compact(card: pd.DataFrame) -> pd.DataFrame:
    """The card for reading: one row per judge, model, data set, criterion and level, one column per statistic
    holding "value (low to high)" (— where the judge has no such number), with n, what the intervals resampled
    (ci_over) and failed."""
    cells = card.assign(text=[value_with_interval(r).replace("95% CI ", "") for r in card.to_dict("records")])
    keys = ["judge", "dataset", "criterion", "level"]
    wide = cells.pivot_table(index=keys, columns="statistic", values="text", aggfunc="first", sort=False)
    grouped = cells.groupby(keys, sort=False)
    counts = grouped[["n"]].max().join(grouped[["ci_over"]].first()).join(grouped[["failed"]].max())
    ordered = [s for s in STATISTICS if s in wide.columns]
    return counts.join(wide[ordered]).fillna("—")


CONSTANT = "constant: the most frequent human grade"


def relevance_card(frame: pd.DataFrame, judges: Mapping[str, str], unit: str, *, scale: Sequence[int],
                   human: str = "human_grade", expected: Mapping[str, str] | None = None, relevant_from: int = 2,
                   model: str = "", dataset: str = "", seed: int = 0, n_resamples: int = 2000) -> pd.DataFrame:
    """The report card of graders of one's own items in one call, in the form chapter 07 gives the study's judges:
    per grader (``judges``: name → column of integer grades on ``scale``, e.g. an LLM judge and a BM25 baseline
    graded by cuts) κ, quadratic-weighted κ, κ binarised at ``relevant_from``, Krippendorff's α and, for the graders
    with an ``expected`` column (name → E[g] or any score), Spearman's ρ pooled and within units, each with its
    interval over the independent ``unit`` (the query; none over fewer than ``MIN_CI_UNITS`` units,
    :func:`lib.analysis.validity.relevance_agreement`); beside them the constant baseline, every item graded with
    the most frequent human grade, whose κ is 0 by construction (the floor). Items a grader has no grade for count
    as its ``failed``. Read it with :func:`compact`; write it with :func:`card_markdown` or
    ``compact(card).to_latex()``."""
    expected = dict(expected or {})
    unknown = sorted(set(expected) - set(judges))
    if unknown:
        raise ValueError(f"expected columns for graders not in judges: {unknown}")
    table = frame.assign(**{CONSTANT: int(frame[human].mode().min())})
    rows: list[dict[str, object]] = []
    for name, column in {**judges, CONSTANT: CONSTANT}.items():
        agreement = relevance_agreement(table, column, unit, human, expected.get(name), scale, relevant_from, seed,
                                        n_resamples)
        rows += agreement_rows(agreement, name, "—" if name == CONSTANT else model, dataset)
    return report_card(rows, anchors=())


def card_markdown(table: pd.DataFrame) -> str:
    """A table (e.g. :func:`compact`'s) as a Markdown pipe table, its index as the first columns."""
    flat = table.reset_index()
    lines = ["| " + " | ".join(map(str, flat.columns)) + " |", "|" + "---|" * len(flat.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in flat.itertuples(index=False)]
    return "\n".join(lines)


def without_small_intervals(table: pd.DataFrame, n: str = "n") -> pd.DataFrame:
    """``table`` with ci_low and ci_high blanked (NaN) on rows whose ``n`` is below ``MIN_CI_UNITS``: the card's
    rule, for tables shown before they enter the card."""
    small = table[n] < MIN_CI_UNITS
    return table.assign(ci_low=table["ci_low"].mask(small), ci_high=table["ci_high"].mask(small))


def resampled_units(ci_over: str) -> int | None:
    """The count in a ``ci_over`` text ("4 documents" → 4); None for "—" (no interval)."""
    return None if ci_over == "—" else int(ci_over.split()[0])


def value_with_interval(row: Mapping, with_units: bool = False) -> str:
    """"value (95% CI low to high)", with ``with_units`` "value (95% CI low to high, 43 queries)" (the row's
    ``ci_over``); an undefined value (e.g. scores constant within every document) and a suppressed interval (fewer
    than ``MIN_CI_UNITS`` units, see :func:`report_card`) are said to be so."""
    if not np.isfinite(row["value"]):
        return "undefined (no document or item left to correlate)"
    low, high = row["ci_low"], row["ci_high"]
    if np.isfinite(low) and np.isfinite(high):
        over = f", {row['ci_over']}" if with_units and row.get("ci_over", "—") != "—" else ""
        return f"{number_text(row['value'])} ({interval_text(low, high)}{over})"
    units = resampled_units(row["ci_over"]) if "ci_over" in row else None
    return (f"{number_text(row['value'])} (no CI: {row['ci_over']})" if units is not None and units < MIN_CI_UNITS
            else f"{number_text(row['value'])} (CI undefined)")


def threats_to_validity(card: pd.DataFrame, bias: Sequence[Verdict], model: str, queries: int, folds: int,
                        pilot_queries: int, crs_sessions: int | None = None) -> str:
    """Markdown list of the threats to chapter 07's conclusions, every number taken from the tables passed in:
    the judge models (``model`` and those of the card's LLM rows, ``describe_model``) beside the anchors' models;
    the card rows whose CI includes 0, grouped by judge and data set, and the widest CI with its n; the bias
    battery's verdicts (``bias``, one line: each claim and its outcome); the pilot and the folds the primary
    reading was declared after and scored over; the simulated users of chapter 06 (``crs_sessions``, None when
    the CRS rows are not in the card)."""
    models = sorted((set(card.model) - {"—"}) | {model})
    lines = [f"- **A small judge.** Every LLM number here comes from {' and '.join(map(describe_model, models))}; "
             f"the anchors beside them come from GPT-4-class models (and from other samples: G-Eval's 100 documents, "
             f"LLMJudge's DL 2023 queries), so a gap is expected and says how far this judge can be used."]
    llm = card[card.model != "—"]
    # each number against no agreement (0) by the study's one rule: "fails" lies wholly below 0, "undetermined"
    # with an interval straddles it
    against_zero = pd.Series([decide(Claim("human labels", 0.0), low, high) for low, high in
                              zip(llm.ci_low, llm.ci_high, strict=True)], index=llm.index, dtype=object)
    has_interval = np.isfinite(llm.ci_low) & np.isfinite(llm.ci_high)
    spans_zero = llm[(against_zero == "undetermined") & has_interval]
    below_zero = llm[against_zero == "fails"]
    if len(below_zero):
        listed = "; ".join(f"*{r.judge}* on {r.dataset}: {r.statistic} ({r.criterion}, {r.level}) "
                           f"{value_with_interval(r._asdict(), with_units=True)}" for r in below_zero.itertuples())
        lines.append(f"- **Below 0.** {len(below_zero)} LLM-judge number{'s' if len(below_zero) > 1 else ''} "
                     f"ha{'ve' if len(below_zero) > 1 else 's'} a 95% CI entirely below 0 — {listed}. Krippendorff's α "
                     f"pools both raters' grade distributions, so it measures agreement including calibration: a "
                     f"judge whose grades sit on a shifted scale scores below 0 on α even when it orders the items "
                     f"as the humans do (read it beside ρ and τ); a κ below 0 is disagreement beyond chance.")
    if len(spans_zero):
        listed = "; ".join(f"*{judge}* on {dataset}: " + ", ".join(
            f"{r.statistic} ({r.criterion}, {r.level}) {value_with_interval(r._asdict(), with_units=True)}"
            for r in part.itertuples())
            for (judge, dataset), part in spans_zero.groupby(["judge", "dataset"], sort=False))
        with_ci = int(np.isfinite(llm.ci_low).sum())
        lines.append(f"- **Indistinguishable from no agreement.** {len(spans_zero)} of the {with_ci} LLM-judge numbers "
                     f"with an interval "
                     f"include 0 in it — {listed}.")
    widths = (card.ci_high - card.ci_low).dropna()
    if len(widths):
        widest = card.loc[widths.idxmax()]
        defined = card[np.isfinite(card.value)]
        fewest = defined.ci_over.map(resampled_units).dropna()
        fewest_text = (f"; the fewest units behind a number in the card: {defined.loc[fewest.idxmin(), 'ci_over']}"
                       if len(fewest) else "")
        lines.append(f"- **Small n.** The widest interval is {widest.judge} on {widest.dataset} ({widest.criterion}, "
                     f"{widest.level} level, {widest.statistic}): {value_with_interval(widest, with_units=True)}"
                     f"{fewest_text}. Intervals resample the independent units (queries, documents, questions, "
                     f"users), never the judge's noise.")
    units = card["ci_over"].map(resampled_units)
    few = card[units.notna() & (units < MIN_CI_UNITS)]
    if len(few):
        groups = few.groupby(["judge", "dataset", "ci_over"], sort=False).size()
        # the fewest units that a bootstrap could resample at all (one unit, or none, leaves nothing to draw)
        smallest = int(min(units[few.index][units[few.index] >= 2], default=MIN_CI_UNITS))
        listed = "; ".join(f"*{judge}* on {dataset} ({count} row{'s' if count > 1 else ''}, over {over})"
                           for (judge, dataset, over), count in groups.items())
        lines.append(f"- **No interval over fewer than {MIN_CI_UNITS} units.** {len(few)} numbers rest on too few "
                     f"queries, documents, questions or users to resample — {listed}. They are point estimates only; "
                     f"with {smallest} units a bootstrap takes at most {math.comb(2 * smallest - 1, smallest)} "
                     f"distinct values and would look narrower than the uncertainty is.")
    if bias:
        lines.append("- **Judge bias.** " + "; ".join(f"{v.system} {v.construct}: {v.verdict}" for v in bias)
                     + " (the evidence of each is in the verdicts table).")
    lines.append(f"- **Declared after a pilot, scored out of fold.** The primary way of reading the relevance calls "
                 f"was declared before the run but after a pilot of {pilot_queries} of the {queries} queries, which "
                 f"stays in the sample (the chapter also reports the queries outside it); every fitted reading is "
                 f"scored on queries its cuts were not fit on ({folds} folds of queries). Every interval resamples "
                 f"the groups the items are nested in (queries, documents, questions, users), so none exists over "
                 f"fewer than {MIN_CI_UNITS} of them.")
    if crs_sessions is not None:
        lines.append(f"- **Synthetic users.** The CRS metrics are validated against the same small judge on "
                     f"{crs_sessions} simulated conversations, not against people: convergent validity with an "
                     f"unvalidated judge is agreement between two instruments, not accuracy.")
    return "\n".join(lines)
