"""Recommendation-level checks of CRS replies, and counterfactual replies that test what the adaptation metrics
can see (issue 23).

TAS and CAS score how a reply's *concepts* match the user's preference; they do not ask whether the reply
recommends anything that satisfies it. This module adds that question as an external check of those metrics
(the methodology claims no recommendation accuracy):

* per system turn, the items the reply names (T(t) of :mod:`lib.crs.metrics`), how many of them carry every
  concept of the user's current preference P(t) (the universe items matching the current hidden preference) and
  are not a movie the user said it liked (recommending it back is no recommendation), and ``hit`` = at least one
  does; whether the reply names the user's hidden target item;
* per session, the hit rate over the scored turns, ``success`` = the last reply hits (a recommendation that
  satisfies the final preference, as iEvaLM scores success at the end of a conversation, here against the
  preference rather than one target item) and ``target_success`` = some reply names the target (iEvaLM's own
  criterion).

:func:`counterfactual_log` rewrites every system reply of a real session by a rule whose quality is known:
``nothing`` says it noted the user's latest wish and recommends nothing; ``nothing_random_titles`` adds two
titles that carry none of the user's wishes; ``preference_restated`` restates the whole current preference and
recommends nothing; ``target_named`` names the hidden target item and nothing else. A metric that scores
``nothing`` like a real recommender cannot see whether anything was recommended. That the replies without a
title have no hit holds by construction (:data:`BY_CONSTRUCTION`): it checks this module, not the metrics.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from lib.crs.config import MetricConfig
from lib.crs.metrics import pairs, session_summary, shift_table, system_concepts, turn_table
from lib.crs.records import SessionLog
from lib.crs.universe import ItemUniverse
from lib.seeds import stable_int

COUNTERFACTUALS = ("nothing", "nothing_random_titles", "preference_restated", "target_named")
# The replies known to be worse than a real recommender's (they recommend nothing that fits) and the one known to be
# better (the hidden target fits every current wish).
KNOWN_WORSE = ("nothing", "nothing_random_titles", "preference_restated")
KNOWN_BETTER = ("target_named",)
# The real systems built to recommend well, which the known-quality replies are set against: the two that track
# every wish and reset it at a cue. The memoryless LLM forgets earlier wishes and the stale template never drops
# one by construction, and the echo recommends nothing: each is worse than a recommender by design.
RECOMMENDERS = ("llm", "retrieval_template")
KNOWN_ANSWER_METRICS = ("tas", "cas", "hit_rate")
BY_CONSTRUCTION = {"nothing": "no title, so no hit", "preference_restated": "no title, so no hit",
                   "nothing_random_titles": "its titles carry no wish, so no hit",
                   "target_named": "the target carries every current wish, so every reply hits and succeeds"}


def matching_items(preference: Sequence[str], universe: ItemUniverse) -> frozenset[str]:
    """The universe items carrying every concept of ``preference`` (none for an empty preference)."""
    sets = [universe.postings.get(c, frozenset()) for c in preference]
    return frozenset.intersection(*sets) if sets else frozenset()


def turn_recommendations(log: Mapping[str, Any], universe: ItemUniverse) -> pd.DataFrame:
    """One row per system turn of a session record (:meth:`SessionLog.record`): turn, scored (non-empty reply),
    named (items the reply names), matching (of those, the ones carrying every concept of P(t) that the user has
    not said it liked), hit (matching > 0) and target_named."""
    rows = []
    liked: set[str] = set()
    for user, system in pairs(log["conversation"]):
        meta = user["user_meta"]
        liked |= {meta["liked"]} if meta.get("liked") else set()
        _, _, items = system_concepts(system["text"], frozenset(), universe)
        fitting = (items - liked) & matching_items(meta["preference"], universe)
        rows.append({"session_id": log["session_id"], "system": log["system"], "turn": meta["turn"],
                     "scored": bool(system["text"]), "named": len(items), "matching": len(fitting),
                     "hit": bool(fitting), "target_named": meta["target"] in items})
    return pd.DataFrame(rows)


def session_recommendations(turns: pd.DataFrame) -> dict[str, Any]:
    """A session's hit rate over its scored turns, success (the last scored reply hits) and target_success (some
    reply names the target)."""
    scored = turns[turns["scored"]]
    return {"hit_rate": float(scored["hit"].mean()) if len(scored) else np.nan,
            "success": bool(scored["hit"].iloc[-1]) if len(scored) else False,
            "target_success": bool(turns["target_named"].any())}


def _listed(concepts: Sequence[str], universe: ItemUniverse) -> str:
    return ", ".join(universe.display.get(c, c.partition("=")[2]) for c in sorted(concepts))


def _unrelated_titles(preference: Sequence[str], universe: ItemUniverse, seed: str, k: int = 2) -> list[str]:
    """``k`` item names drawn (seeded by ``seed``) from the items carrying no concept of ``preference``."""
    wanted = set(preference)
    pool = [i for i in universe.item_ids if not (universe.concepts_of[i] & wanted)]
    picks = np.random.default_rng(stable_int(seed)).choice(len(pool), size=k, replace=False)
    return [universe.names[pool[p]] for p in sorted(picks)]


REPLIES: dict[str, Callable[[Mapping[str, Any], ItemUniverse, str], str]] = {
    "nothing": lambda meta, u, seed: f"Noted, you want {_listed(meta['stated'], u)}.",
    "nothing_random_titles": lambda meta, u, seed: (
        f"Noted, you want {_listed(meta['stated'], u)}. You could also watch "
        + " or ".join(_unrelated_titles(meta["preference"], u, seed)) + "."),
    "preference_restated": lambda meta, u, seed: f"So you want {_listed(meta['preference'], u)}.",
    "target_named": lambda meta, u, seed: f"I recommend {u.names[meta['target']]}.",
}


def counterfactual_log(log: SessionLog, kind: str, universe: ItemUniverse) -> dict[str, Any]:
    """The session record with every system reply rewritten by rule ``kind`` (:data:`COUNTERFACTUALS`), its
    system named ``kind``; the user turns, and so the grounding, are the real session's."""
    record = log.record()
    conversation = [dict(turn) for turn in record["conversation"]]
    for position in range(1, len(conversation), 2):
        meta = conversation[position - 1]["user_meta"]
        conversation[position] = {**conversation[position],
                                  "text": REPLIES[kind](meta, universe, f"{log.session_id}:{meta['turn']}")}
    return {**record, "system": kind, "conversation": conversation}


def metric_check(logs: Sequence[SessionLog], universe: ItemUniverse, config: MetricConfig = MetricConfig()
                 ) -> pd.DataFrame:
    """Per session: the real systems' replies and each counterfactual rewrite of the first real system's sessions
    (the same user turns), with TAS, CAS, CC, CR and the recommendation-level hit rate, success and target
    success: what each metric gives a reply of known quality."""
    first_system = logs[0].system
    records = [log.record() for log in logs]
    records += [counterfactual_log(log, kind, universe) for kind in COUNTERFACTUALS for log in logs
                if log.system == first_system]
    rows = []
    for record in records:
        turns = turn_table(record["conversation"], universe, config)
        shifts = shift_table(turns, record["shift_events"], config)
        summary = session_summary(turns, shifts, config)
        rows.append({"reply": record["system"], "session_id": record["session_id"],
                     **{k: summary[k] for k in ("tas", "cas", "cc", "cr")},
                     **session_recommendations(turn_recommendations(record, universe))})
    return pd.DataFrame(rows)


def metric_check_table(check: pd.DataFrame) -> pd.DataFrame:
    """Per reply (real systems first, then the counterfactuals): sessions and the mean of every column of
    :func:`metric_check`, with what holds by construction."""
    order = [*dict.fromkeys(r for r in check["reply"] if r not in COUNTERFACTUALS), *COUNTERFACTUALS]
    table = check.groupby("reply").agg(sessions=("session_id", "size"), tas=("tas", "mean"), cas=("cas", "mean"),
                                       cc=("cc", "mean"), cr=("cr", "mean"), hit_rate=("hit_rate", "mean"),
                                       success=("success", "mean"), target_success=("target_success", "mean"))
    table = table.reindex([r for r in order if r in table.index])
    return table.assign(by_construction=[BY_CONSTRUCTION.get(r, "") for r in table.index])


def known_answers(check: pd.DataFrame, recommenders: Sequence[str] = RECOMMENDERS,
                  metrics: Sequence[str] = KNOWN_ANSWER_METRICS, seed: int = 0, n_resamples: int = 2000
                  ) -> pd.DataFrame:
    """Does each metric score the real recommenders' replies above a reply known to be worse (and below the one
    known to be better)? Per counterfactual reply and metric, from :func:`metric_check`: per simulated user, the
    Mann–Whitney AUC of the known-better side over the known-worse side (:func:`lib.known_answers.entry_auc`: the
    recommenders' session values against the reply's on the same user, ties one half; Hanley & McNeil 1982), its
    mean over users with a percentile bootstrap interval over users (:func:`lib.analysis.stats.unit_bootstrap`;
    none under its minimum of users). 0.5: the metric cannot tell them apart; below 0.5: it prefers the worse.
    Columns as ``lib.tables.SCHEMAS["crs_known_answers"]``; the hit rate of a reply without a fitting title is 0,
    and of the target named 1, by construction (``by_construction``)."""
    from lib.analysis.stats import unit_bootstrap
    from lib.known_answers import entry_auc

    real = check[check["reply"].isin(recommenders)]
    rows = []
    for reply in [r for r in COUNTERFACTUALS if r in set(check["reply"])]:
        counterfactual = check[check["reply"] == reply]
        better_is_reply = reply in KNOWN_BETTER
        for metric in metrics:
            per_user = []
            for user, values in real.groupby("session_id", sort=True)[metric]:
                other = counterfactual.loc[counterfactual["session_id"] == user, metric].dropna().astype(float)
                ours = values.dropna().astype(float)
                auc = entry_auc(other, ours) if better_is_reply else entry_auc(ours, other)
                if np.isfinite(auc):
                    per_user.append((user, auc))
            interval = unit_bootstrap(np.mean, [np.array([a for _, a in per_user])], [u for u, _ in per_user],
                                      "users", seed, n_resamples)
            means = real.groupby("reply")[metric].mean()
            rows.append({"reply": reply, "metric": metric, "known": "better" if better_is_reply else "worse",
                         "auc": interval.value, "ci_low": interval.low, "ci_high": interval.high,
                         "users": interval.units, "recommenders_low": float(means.min()),
                         "recommenders_high": float(means.max()),
                         "reply_mean": float(counterfactual[metric].astype(float).mean()),
                         "by_construction": BY_CONSTRUCTION[reply] if metric == "hit_rate" else ""})
    return pd.DataFrame(rows, columns=["reply", "metric", "known", "auc", "ci_low", "ci_high", "users",
                                       "recommenders_low", "recommenders_high", "reply_mean", "by_construction"])
