"""How close each decision on MiniLM cosines comes to going the other way, on the committed run.

Every cosine is rounded to 5 decimals (:func:`lib.embeddings.similarity`). A decision whose value lies within
1e-5 of its cut could have been made by the rounding itself (and by the CPU before it), so the chapter that
makes it has to say so. The *margin* of a value is its distance to the cut that decides it:

* a threshold (near-duplicate at 0.85, embedding match at 0.6, legacy boundary below 0.5, the cosine baseline's
  cuts fit on dev): |value − cut|;
* an argmax (the persona rule, the zero-shot category): the best value minus the second best (0: an exact tie,
  which goes to the first in order);
* an order (the embedding, category and value_aware rankers; the cosines that rank correlations in chapter 07
  read): the gap between neighbouring scores of a pool or query; 0 is an exact *tie*, which a ranker breaks by
  its seeded tie rule (:func:`lib.rankers.order`) and a rank correlation by mean ranks.

Rounding never swaps two values (it is monotone); it can only make a tie, so ties are counted twice: at 5
decimals and with 15 (``ties_by_rounding`` is the difference). Margins are differences of 5-decimal values,
shown to 6 decimals.

``python -m lib.tools.cut_margins`` prints one row per decision: values, cut, smallest margin, margins below
``RISK`` and ties. It reads each chapter's values by running the notebook's own code cells up to the cell that
computes them (:func:`notebook_state`, LLM answers from the replay cache, nothing written), so it checks what the
chapter computes rather than a copy of it.
"""
from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Iterator
from typing import Any

import nbformat
import numpy as np
import pandas as pd

from lib import embeddings, paths
from lib.tools.pipeline import PARAMS_FILE, parameters_for

RISK = 1e-5
"""A margin below this could have been decided by the 5-decimal rounding."""
UNROUNDED = 15
"""Decimals that keep every bit a cosine's ties depend on (:func:`decimals`)."""


def threshold_margin(values: Iterable[float], cut: float) -> np.ndarray:
    """|value − cut| of each value (NaN values dropped)."""
    array = np.asarray(list(values), dtype=float)
    return np.abs(array[~np.isnan(array)] - cut)


def argmax_margin(values: np.ndarray) -> np.ndarray:
    """Per row of ``values``: the largest value minus the second largest (0 for an exact tie)."""
    top = np.sort(np.asarray(values, dtype=float), axis=1)
    return top[:, -1] - top[:, -2]


def order_margin(scores: Iterable[float]) -> np.ndarray:
    """Gaps between neighbouring finite scores in sorted order (0 for a tie): what separates two places."""
    array = np.asarray(list(scores), dtype=float)
    return np.diff(np.sort(array[np.isfinite(array)]))


def ties(scores: Iterable[float]) -> int:
    """Pairs of exactly equal finite scores."""
    array = np.asarray(list(scores), dtype=float)
    counts = np.unique(array[np.isfinite(array)], return_counts=True)[1]
    return int((counts * (counts - 1) // 2).sum())


@contextlib.contextmanager
def decimals(n: int) -> Iterator[None]:
    """Cosines rounded to ``n`` decimals instead of ``lib.embeddings.DECIMALS`` inside the block (``UNROUNDED``:
    to count the ties the rounding makes)."""
    kept = embeddings.DECIMALS
    embeddings.DECIMALS = n
    try:
        yield
    finally:
        embeddings.DECIMALS = kept


def notebook_state(name: str, through: str) -> dict[str, Any]:
    """The variables of notebook ``name`` after its code cells up to and including the first whose source contains
    ``through``: its parameters cell, then its ``params.yaml`` section (as papermill injects it), then the rest.
    Runs in the notebook folder (as the pipeline does) with ``LLM_MODE=replay`` (a call the cache lacks raises
    rather than reaching a model) and every output swallowed; choose ``through`` before any cell that writes a
    table."""
    cells = [c.source for c in nbformat.read(paths.NOTEBOOKS / f"{name}.ipynb", as_version=4).cells
             if c.cell_type == "code"]
    if not any(through in source for source in cells):
        raise ValueError(f"no code cell of {name} contains {through!r}")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    cwd, mode = os.getcwd(), os.environ.get("LLM_MODE")
    try:
        os.chdir(paths.NOTEBOOKS)
        os.environ["LLM_MODE"] = "replay"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for index, source in enumerate(cells):
                exec(compile(source, f"{name}[{index}]", "exec"), namespace)
                if index == 0:
                    namespace.update(parameters_for(name, PARAMS_FILE))
                if through in source:
                    break
    finally:
        os.chdir(cwd)
        if mode is None:
            os.environ.pop("LLM_MODE")
        else:
            os.environ["LLM_MODE"] = mode
    return namespace


def row(chapter: str, decision: str, cut: str, margins: np.ndarray, tied: int = 0, tied_unrounded: int = 0
        ) -> dict[str, Any]:
    """One decision's line of :func:`report` from the margins of its values and the ties at 5 and 15 decimals."""
    margins = np.round(margins, embeddings.DECIMALS + 1)
    return {"chapter": chapter, "decision": decision, "cut": cut, "values": int(margins.size),
            "smallest_margin": float(margins.min()) if margins.size else np.nan,
            "below_risk": int((margins < RISK).sum()), "ties": tied, "ties_by_rounding": tied - tied_unrounded}


def chapter01() -> list[dict[str, Any]]:
    state = notebook_state("01_nudge_candidates", "mark_near_duplicates(")
    pairs, cut = state["pair_similarities"], state["duplicate_threshold"]
    persona = argmax_margin(state["similarities"].to_numpy())
    with decimals(UNROUNDED):
        unrounded = argmax_margin(state["nudges"].persona_similarities(state["sampled"].text.tolist()).to_numpy())
    return [row("01", "near-duplicate: within-pool cosine ≥ cut", f"{cut}", threshold_margin(pairs, cut)),
            row("01", "persona rule 'similarity': argmax over personas", "argmax", persona, int((persona == 0).sum()),
                int((unrounded == 0).sum()))]


def chapter02() -> list[dict[str, Any]]:
    from lib import rankers
    from lib.embeddings import similarity

    state = notebook_state("02_baselines", "zero_shot_categories(")
    pools, ranker_runs = state["pools"], state["ranker_runs"]
    ranking = rankers.rank_all(pools, ranker_runs, tie_seed=state["tie_seed"])
    _, definitions = rankers.category_vectors(state["embed"])
    vectors = np.vstack([p.vectors for p in pools])
    categories = argmax_margin(similarity(vectors, definitions))
    with decimals(UNROUNDED):
        unrounded_ranking = rankers.rank_all(pools, ranker_runs, tie_seed=state["tie_seed"])
        unrounded = argmax_margin(similarity(vectors, definitions))
    rows = [row("02", "zero-shot category (and the category ranker's match): argmax", "argmax", categories,
                int((categories == 0).sum()), int((unrounded == 0).sum()))]
    for ranker in ("embedding", "category", "value_aware"):
        pools_scored = ranking[ranking.ranker == ranker].groupby("entry_id").score
        gaps = np.concatenate([order_margin(g) for _, g in pools_scored])
        rows.append(row("02", f"ranker '{ranker}': order within a pool", "neighbour", gaps,
                        sum(ties(g) for _, g in pools_scored),
                        sum(ties(g) for _, g in unrounded_ranking[unrounded_ranking.ranker == ranker]
                            .groupby("entry_id").score)))
    return rows


def chapter05() -> list[dict[str, Any]]:
    from lib.embeddings import similarity

    # runs the chapter through its triad check in replay: on the way it refills the simulated monitor log
    # (outputs/monitor/, not committed) as the chapter does
    state = notebook_state("05_nugget_evaluation", "triads.nugget_labels(")
    cut, labels, answers, notes = (state["embedding_threshold"], state["triad_labels"], state["triad_answers"],
                                   state["triad_notes"])
    # creation's recall (lib.triads.creation_recall): a note counts as stated when its best cosine to a nugget
    # created from the clean answer reaches the cut; the baseline, when the query's cosine does
    by_nugget, by_query = [], []
    for qid, part in answers[answers.variant == "clean"].groupby("qid", sort=False):
        note_vectors = embeddings.embed(notes[qid])
        created = labels[(labels.qid == qid) & (labels.origin == "answer")].nugget.tolist()
        if created:
            by_nugget.append(similarity(embeddings.embed(created), note_vectors).max(axis=0))
        by_query.append(similarity(embeddings.embed([part["query"].iloc[0]]), note_vectors)[0])
    return [row("05", "creation recall: best cosine of a note to a created nugget ≥ cut", f"{cut}",
                threshold_margin(np.concatenate(by_nugget), cut)),
            row("05", "query-only baseline: cosine of a note to the query ≥ cut", f"{cut}",
                threshold_margin(np.concatenate(by_query), cut))]


def chapter06() -> list[dict[str, Any]]:
    from lib.crs.config import MetricConfig
    from lib.crs.metrics import legacy_similarities
    from lib.crs.runner import read_run

    config = MetricConfig(legacy_method=parameters_for("06_crs_simulation")["legacy_method"])
    logs, _ = read_run()
    values = np.concatenate([legacy_similarities([t["text"] for t in log.record()["conversation"][0::2]],
                                                 config.legacy_method) for log in logs])
    return [row("06", f"legacy boundary ({config.legacy_method}): similarity < cut", f"{config.legacy_cut}",
                threshold_margin(values, config.legacy_cut))]


def chapter07() -> list[dict[str, Any]]:
    from lib import baselines
    from lib.analysis import calibration
    from lib.chapters import ch07

    state = notebook_state("07_validity", "ch07.draw_samples(")
    samples, scale = state["samples"], state["SCALE"]
    # the judged sample and its folds, as section B draws them (no call: the cosines and the cuts need none)
    judged = ch07.relevance_sample(samples.dl19, state["relevance_passages_per_query"], state["relevance_seed"],
                                   samples.pilot)
    judged = judged.assign(cosine=baselines.cosine_scores(judged["query"].tolist(), judged["passage"].tolist()))
    folds = calibration.group_folds(judged.qid, state["crossfit_folds"], state["relevance_seed"])
    row_fold = judged.qid.map(folds)
    cross_fitted = []
    for fold in sorted(set(row_fold)):
        rest, held = judged[row_fold != fold], judged[row_fold == fold]
        cuts = calibration.fit_thresholds(rest.cosine.to_numpy(), rest.human_grade.to_numpy(), scale)
        cross_fitted.append(np.min([threshold_margin(held.cosine, c) for c in cuts], axis=0))
    summeval = samples.summeval_split.test_rows(samples.summeval)
    to_source = baselines.cosine_scores(summeval.system_output.tolist(), summeval.source.tolist())
    by_query = judged.groupby("qid").cosine
    with decimals(UNROUNDED):
        unrounded_source = baselines.cosine_scores(summeval.system_output.tolist(), summeval.source.tolist())
        unrounded_query = judged.assign(cosine=baselines.cosine_scores(judged["query"].tolist(),
                                                                       judged["passage"].tolist()))
    return [row("07", "cosine baseline: grade by cuts fit on the other folds of queries", "per fold",
                np.concatenate(cross_fitted)),
            row("07", "query–passage cosine: order within a query (Kendall τ)", "neighbour",
                np.concatenate([order_margin(g) for _, g in by_query]), sum(ties(g) for _, g in by_query),
                sum(ties(g) for _, g in unrounded_query.groupby("qid").cosine)),
            row("07", "SummEval cosine to the source: order (correlations)", "neighbour", order_margin(to_source),
                ties(to_source), ties(unrounded_source))]


def report() -> pd.DataFrame:
    """One row per decision on MiniLM cosines (see the module): values, cut, smallest margin, margins below
    ``RISK``, exact ties and the ties the rounding made."""
    rows = [*chapter01(), *chapter02(), *chapter05(), *chapter06(), *chapter07()]
    return pd.DataFrame(rows).set_index(["chapter", "decision"])


def main() -> None:
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(report().to_string(float_format=lambda v: f"{v:.2e}" if v < 1e-3 else f"{v:.5f}"))


if __name__ == "__main__":
    main()
