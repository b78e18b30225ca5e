"""Chapter 03 (judge labeling): the loops that build its tables and its generated text, and its front-page
headline. The notebook calls these; each function that needs no LLM is tested on small hand-made tables
(``tests/test_ch03.py``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.analysis import validity
from lib.analysis.stats import interval_text
from lib.chapters.headline import Tables, headline
from lib.judges import geval, relevance
from lib.judges.examples import EXAMPLE_RECORDS, EXAMPLE_RESPONSES
from lib.judges.guardrails import financial_safety
from lib.judges.items import JudgeItem
from lib.judges.outcomes import intervention_success, stake_effectiveness
from lib.llm.gateway import Gateway

NUDGE_RUBRICS = ("ToneEmpathy", "CulturalSensitivity")  # the G-Eval rubrics the nudges are scored on
# who wrote the evaluation steps compared on SummEval coherence
STEP_AUTHORS: tuple[geval.StepsAuthor, ...] = ("model", "study")


def noveleval_sample(novel: pd.DataFrame, queries: int, seed: int, passage_chars: int
                     ) -> tuple[pd.DataFrame, list[str]]:
    """(the passages of a seeded sample of NovelEval queries with ``passage_shown`` cut at a word boundary, the
    sampled query ids)."""
    chosen = validity.sample_ids(novel.qid, queries, seed, key=int)
    novel = novel[novel.qid.isin(chosen)].reset_index(drop=True)
    novel["passage_shown"] = [relevance.truncate(t, passage_chars) for t in novel.passage]
    return novel, chosen


def sample_text(novel: pd.DataFrame, queries: Sequence[str], passage_chars: int) -> str:
    """How many passages, their human grades, and how many the cut shortened."""
    return (f"queries {list(queries)}: {len(novel)} passages; human grades "
            f"{novel.human_grade.value_counts().sort_index().to_dict()}; "
            f"{int((novel.passage_shown != novel.passage).sum())} passages cut at {passage_chars} characters")


def passage_items(novel: pd.DataFrame, column: str = "passage_shown") -> list[JudgeItem]:
    """One judge item per passage: the query as source, the passage (``column``) as output."""
    return [JudgeItem(source=q, output=p) for q, p in zip(novel["query"], novel[column], strict=True)]


def confusions(novel: pd.DataFrame, chosen: str) -> dict[str, pd.DataFrame]:
    """Human × judge grade tables, one per label definition, titled (the chosen one marked)."""
    return {f"Human × judge grades, **{name}**{' (chosen)' if name == chosen else ''}:":
            validity.confusion(novel, "human_grade", column) for name, column in validity.LABEL_DEFINITIONS.items()}


def leniency_text(novel: pd.DataFrame, label_column: str, exact_agreement: float) -> str:
    """What the chosen label gives the passages humans graded 0, beside a judge that always answers 0."""
    irrelevant = novel[novel.human_grade == 0]
    return (f"Leniency: of the {len(irrelevant)} passages humans graded 0, the chosen label gives 0 to "
            f"{int((irrelevant[label_column] == 0).sum())} and 1 or 2 to {int((irrelevant[label_column] > 0).sum())}; "
            f"a judge that always answered 0 would agree exactly on {(novel.human_grade == 0).mean():.0%} of all "
            f"passages, this one on {exact_agreement:.0%}.")


def cut_check(gateway: Gateway, novel: pd.DataFrame, label_column: str, sample: int, seed: int) -> pd.DataFrame:
    """A seeded sample of the passages the cut shortened, judged again in full: human grade, the label on the cut
    passage and on the full one (``label_full``), indexed by passage row."""
    cut = novel[novel.passage_shown != novel.passage]
    rows = validity.sample_ids(cut.index, min(sample, len(cut)), seed)
    full = relevance.judge_pointwise(gateway, passage_items(novel.loc[rows], "passage"),
                                     call_label="noveleval-pointwise-full", prompts=relevance.PASSAGE_PROMPTS)
    judged = relevance.judgments_frame(full).set_index(pd.Index(rows))
    return novel.loc[rows, ["human_grade", label_column]].join(judged[label_column].rename("label_full"))


def position_texts(reshuffled: Mapping[str, float], position: pd.DataFrame) -> list[str]:
    """The listwise position effect in words: where the shuffle changed the order, how often the grades agree;
    per order, how often the first nudge shown got grade 2 against the share of all nudges."""
    lines = [f"position bias where the order changed: {reshuffled['pools_reordered']} of {reshuffled['pools']} pools "
             f"were shown in a new order ({reshuffled['pools'] - reshuffled['pools_reordered']} shuffles were the "
             f"identity and sent the same prompt again); on their {reshuffled['n']} nudges the listwise grades agree "
             f"exactly on {reshuffled['exact_agreement']:.1%} (κ {reshuffled['kappa']:.3f}); "
             f"{reshuffled['same_first_item']} pools show the same nudge first in both orders"]
    lines += [f"listwise, {order}: the first nudge shown got grade 2 in {int(row.first_shown_top)} of {int(row.pools)} "
              f"pools ({row.first_shown_top_share:.0%}), while {row.all_items_top_share:.0%} of all nudges got grade 2"
              for order, row in position.iterrows()]
    return lines


def coherence_by_author(gateway: Gateway, items: Sequence[JudgeItem], n_samples: int
                        ) -> dict[str, list[geval.GEvalResult]]:
    """G-Eval coherence of the summaries with the model's and with the study's evaluation steps."""
    return {author: geval.geval(geval.COHERENCE, gateway, geval.evaluation_steps(geval.COHERENCE, author), items,
                                n_samples=n_samples)
            for author in STEP_AUTHORS}


def coherence_scores(summeval: pd.DataFrame, coherence: Mapping[str, Sequence[geval.GEvalResult]]
                     ) -> tuple[pd.DataFrame, list[str], list[str]]:
    """(``summeval`` with a weighted and an argmax column per steps author, those columns, one line per author on
    failures and how the scores were read)."""
    summeval = summeval.copy()
    lines = []
    for author, results in coherence.items():
        summeval[f"{author} steps, weighted"] = [r.score for r in results]
        summeval[f"{author} steps, argmax"] = [r.argmax for r in results]
        lines.append(f"{author} steps: {len(results)} summaries of {summeval.doc_id.nunique()} documents; failures: "
                     f"{sum(not r.ok for r in results)}; scored by: "
                     f"{pd.Series([r.scored_by for r in results]).value_counts().to_dict()}")
    return summeval, [c for c in summeval.columns if " steps, " in c], lines


def per_document_rho(summeval: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Spearman ρ of each score column with the experts' coherence within each document."""
    scored = summeval.dropna(subset=list(columns))
    return pd.DataFrame({c: {doc: validity.per_group_correlation(g, "doc_id", "coherence", c)[0]
                             for doc, g in scored.groupby("doc_id")}
                         for c in columns}).rename_axis("document")


def steps_text(correlations: pd.DataFrame, per_document: pd.DataFrame, documents: int) -> str:
    """Whose evaluation steps agree better with the experts, read against the spread between documents."""
    model_rho = correlations.loc["model steps, weighted", "spearman"]
    study_rho = correlations.loc["study steps, weighted", "spearman"]
    return (f"Probability-weighted scores: model steps ρ = {model_rho:.3f}, study steps ρ = {study_rho:.3f} "
            f"({'the model' if model_rho > study_rho else 'the study'}'s steps ahead by "
            f"{abs(model_rho - study_rho):.3f} over {documents} documents, while the per-document ρ of either spans "
            f"{per_document.min().min():.2f} to {per_document.max().max():.2f}): this check does not show that the "
            f"study's steps agree better with the experts.")


def nudge_geval(gateway: Gateway, items: Sequence[JudgeItem], n_samples: int) -> dict[str, list[geval.GEvalResult]]:
    """G-Eval with the study's evaluation steps on every judged nudge, per nudge rubric."""
    return {name: geval.geval(geval.RUBRICS[name], gateway, geval.evaluation_steps(geval.RUBRICS[name], "study"),
                              items, n_samples=n_samples)
            for name in NUDGE_RUBRICS}


def guardrail_examples(responses: Sequence[tuple[str, str]] = EXAMPLE_RESPONSES) -> pd.DataFrame:
    """The FinancialSafety guardrail on the worked example responses."""
    rows = []
    for rid, text in responses:
        verdict = financial_safety(text)
        rows.append({"response": rid, "score": verdict.score, "blocked": verdict.blocked,
                     "violations": "; ".join(verdict.violations), "text": text})
    return pd.DataFrame(rows)


def outcome_examples() -> tuple[pd.DataFrame, pd.DataFrame]:
    """InterventionSuccess per worked example record ("no data" where it is undefined), and effectiveness by stake."""
    success = pd.DataFrame([{"record": r.record_id, "stake": r.stake_type, "action": r.action,
                             "InterventionSuccess": "no data" if intervention_success(r) is None
                             else intervention_success(r)}
                            for r in EXAMPLE_RECORDS])
    return success, pd.DataFrame(stake_effectiveness(EXAMPLE_RECORDS)).T.rename_axis("stake type")


@headline("03_judge_labeling", "judge_validity")
def chosen_label(tables: Tables) -> str:
    """The label definition chosen for chapter 04 and its agreement with human grades, beside the others."""
    validity = tables["judge_validity"]
    chosen = validity[validity["chosen"]]
    if len(chosen) != 1:
        raise ValueError(f"judge_validity: {len(chosen)} rows marked chosen, expected 1")
    row = chosen.iloc[0]
    others = ", ".join(f"{r['weighted_kappa']:.2f} ({r['label_definition']})"
                       for _, r in validity[~validity["chosen"]].iterrows())
    return (f"The label used downstream is the {row['label_definition']} grade: quadratic-weighted κ = "
            f"{row['weighted_kappa']:.2f} "
            f"({interval_text(row['weighted_kappa_ci_low'], row['weighted_kappa_ci_high'])}) "
            f"with human grades on {int(row['n'])} passages ({row['dataset']})"
            + (f", against {others}." if others else "."))
