"""Run the simulation: scripts → utterances → conversations with every system → metrics → judge → JSONL files.

:func:`run_sessions` is deterministic given its seeds (no clock, no random ids: ``session_id`` is ``s<seed>``);
with a replayed LLM cache it rewrites the same bytes. Each system meets the same scripted user (same target,
same shifts, same base utterances); only the feedback phrase before a refine turn depends on the system's last
reply. Turns advance in lockstep over the sessions, so one system's LLM calls of a turn go to the gateway as
one batch.

Conversations that need no LLM call (systems and users without one) come out the same wherever they are simulated,
so one chapter can judge the conversations another analyses: :func:`judgment_table` keeps each judgment with a
digest of the transcript the judge read, and :func:`judgments_of` gives them back only for the same transcripts.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lib.crs.config import MetricConfig
from lib.crs.judge import judge_conversations, not_judged, transcript
from lib.crs.metrics import (
    boundary_agreement,
    legacy_boundaries,
    legacy_similarities,
    session_summary,
    shift_table,
    turn_table,
)
from lib.crs.records import (
    CRS_OUTPUTS,
    LOG_FILE,
    RESULTS_FILE,
    JudgeRecord,
    ResultRow,
    SessionLog,
    read_jsonl,
    write_jsonl,
)
from lib.crs.simulator import Phrasing, Script, SimulatorSettings, phrase_scripts, simulate_script, user_text
from lib.crs.systems import CRS, SystemReply
from lib.crs.universe import ItemUniverse
from lib.embeddings import Embed
from lib.llm.gateway import Gateway
from lib.tables import check_upstream

DIAGNOSTICS = ("titles_proposed", "titles_off_universe", "titles_off_candidates")
DECIMALS = 6  # metric values are rounded so that files do not depend on the last bits of a float sum


@dataclass
class SimulationRun:
    """What :func:`run_sessions` produced: the session logs and result rows (as written), and the per-turn and
    per-shift metric tables (with ``model`` and ``session_id``)."""

    logs: list[SessionLog]
    results: list[ResultRow]
    turns: pd.DataFrame
    shifts: pd.DataFrame

    @property
    def rows(self) -> pd.DataFrame:
        """The results as a flat frame (judge fields as ``judge_<name>``)."""
        return results_frame(self.results)


def results_frame(results: Sequence[ResultRow]) -> pd.DataFrame:
    return pd.json_normalize([r.record() for r in results], sep="_")


def session_id(seed: int) -> str:
    return f"s{seed}"


def _user_meta(script: Script, turn: int, phrasing: Phrasing) -> dict[str, Any]:
    plan = script.turns[turn]
    return {"turn": plan.turn, "kind": plan.kind, "focus": plan.focus, "stated": list(plan.stated),
            "preference": list(plan.preference), "dropped": list(plan.dropped), "shift": plan.shift,
            "phrasing": phrasing, "target": plan.target, "liked": plan.liked,
            "quiet": plan.quiet}


def converse(system: CRS, scripts: Sequence[Script], phrased: Sequence[Sequence[tuple[str, Phrasing]]],
             universe: ItemUniverse) -> tuple[list[list[dict[str, Any]]], list[dict[str, int]]]:
    """The conversations of ``system`` with every scripted user, and per session the counts of titles the system
    proposed, dropped (outside the universe) and kept off the candidate list. The system sees speakers and
    texts only."""
    conversations: list[list[dict[str, Any]]] = [[] for _ in scripts]
    counts = [dict.fromkeys(DIAGNOSTICS, 0) for _ in scripts]
    for t in range(len(scripts[0].turns)):
        for script, conversation, utterances in zip(scripts, conversations, phrased, strict=True):
            previous = script.turns[t - 1] if t else None
            previous_text = conversation[-1]["text"] if t else None
            text = user_text(script.turns[t], utterances[t][0], previous, previous_text, universe, script.targets,
                             script.turns[0].liked)
            conversation.append({"speaker": "USER", "text": text, "user_meta": _user_meta(script, t, utterances[t][1])})
        views = [[{"speaker": turn["speaker"], "text": turn["text"]} for turn in c] for c in conversations]
        replies: list[SystemReply] = system.respond(views, [s.seed * 1000 + t for s in scripts])
        for conversation, reply, count in zip(conversations, replies, counts, strict=True):
            conversation.append({"speaker": "SYSTEM", "text": reply.text, "constraints": list(reply.constraints)})
            count["titles_proposed"] += reply.proposed
            count["titles_off_universe"] += reply.off_universe
            count["titles_off_candidates"] += reply.off_candidates
    return conversations, counts


def _number(value: Any) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), DECIMALS)


def evaluate_logs(logs: Sequence[SessionLog], universe: ItemUniverse, config: MetricConfig = MetricConfig(),
                  embed: Embed | None = None) -> tuple[list[dict[str, Any]], pd.DataFrame, pd.DataFrame]:
    """Metrics of each log (:mod:`lib.crs.metrics`): one dict of ResultRow metric fields per log, and the
    per-turn and per-shift tables. ``embed`` replaces MiniLM for the legacy segmentation (tests)."""
    metrics, turn_frames, shift_frames = [], [], []
    for log in logs:
        record = log.record()
        conversation, events = record["conversation"], record["shift_events"]
        turns = turn_table(conversation, universe, config)
        shifts = shift_table(turns, events, config)
        summary = session_summary(turns, shifts, config)
        users = conversation[0::2]
        similarities = legacy_similarities([u["text"] for u in users], config.legacy_method, embed)
        hypothesis = legacy_boundaries(similarities.tolist(), config.legacy_cut)
        agreement = boundary_agreement([e["turn"] for e in events], hypothesis, len(users), config.boundary_tolerance)
        metrics.append({
            **{k: (_number(v) if isinstance(v, float) or v is None else v) for k, v in summary.items()},
            "n_turns": len(users), "n_shifts": len(events), "legacy_boundaries": list(hypothesis),
            "legacy_tp": int(agreement["tp"]), "legacy_pk": _number(agreement["pk"]),
            "llm_user_turns": sum(u["user_meta"]["phrasing"] == "llm" for u in users),
            "template_fallback_turns": sum(u["user_meta"]["phrasing"] == "template_fallback" for u in users)})
        identity = {"system": log.system, "session_id": log.session_id}
        turn_frames.append(turns.assign(**identity))
        shift_frames.append(shifts.assign(**identity))
    return metrics, _stack(turn_frames), _stack(shift_frames)


def _stack(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    return frame[["system", "session_id", *[c for c in frame.columns if c not in ("system", "session_id")]]]


def result_rows(logs: Sequence[SessionLog], metrics: Sequence[Mapping[str, Any]], seeds: Sequence[int],
                diagnostics: Sequence[Mapping[str, int]], judgments: Sequence[JudgeRecord]) -> list[ResultRow]:
    """One validated :class:`~lib.crs.records.ResultRow` per log."""
    return [ResultRow.model_validate({"system": log.system, "session_id": log.session_id, "seed": seed, **m, **d,
                                      "judge": j})
            for log, m, seed, d, j in zip(logs, metrics, seeds, diagnostics, judgments, strict=True)]


def simulate(universe: ItemUniverse, systems: Sequence[CRS], seeds: Sequence[int],
             simulator: SimulatorSettings = SimulatorSettings(), *, user_gateway: Gateway | None = None,
             llm_user_sessions: int = 0) -> tuple[list[SessionLog], list[dict[str, int]]]:
    """The conversations of every system with one simulated user per seed: the session logs, system by system and
    sessions in seed order within each, and each log's counts of titles (:func:`converse`). ``llm_user_sessions``:
    how many sessions (the first ones) have LLM-phrased user turns (needs ``user_gateway``; the others use
    templates)."""
    if len(set(seeds)) != len(seeds):
        raise ValueError("seeds must be distinct: each names a session")
    scripts = [simulate_script(universe, simulator, seed) for seed in seeds]
    phrased = phrase_scripts(scripts, universe, user_gateway, llm_user_sessions)
    logs: list[SessionLog] = []
    diagnostics: list[dict[str, int]] = []
    for system in systems:
        conversations, counts = converse(system, scripts, phrased, universe)
        diagnostics.extend(counts)
        logs.extend(SessionLog.model_validate({"session_id": session_id(s.seed), "system": system.name,
                                               "true_genre": s.true_genre, "conversation": c,
                                               "shift_events": [e.as_record() for e in s.shift_events]})
                    for s, c in zip(scripts, conversations, strict=True))
    return logs, diagnostics


def transcript_digest(log: SessionLog) -> str:
    """SHA-256 of the transcript the conversation judge reads (:func:`lib.crs.judge.transcript`)."""
    return hashlib.sha256(transcript(log.record()["conversation"]).encode("utf-8")).hexdigest()


def judgment_table(judge_gateway: Gateway, logs: Sequence[SessionLog]) -> pd.DataFrame:
    """The conversation judge's judgment of each log, one row per log in order: ``system``, ``session_id``,
    ``transcript_sha256`` (:func:`transcript_digest`) and the :class:`~lib.crs.records.JudgeRecord` fields (table
    ``crs_judgments``: a chapter that judges conversations another chapter analyses, :func:`judgments_of`)."""
    records = judge_conversations(judge_gateway, [log.record()["conversation"] for log in logs],
                                  [f"{log.system}:{log.session_id}" for log in logs])
    return pd.DataFrame([{"system": log.system, "session_id": log.session_id,
                          "transcript_sha256": transcript_digest(log), **record.model_dump()}
                         for log, record in zip(logs, records, strict=True)])


# Who writes crs_judgments and which parameters its simulation and chapter 06's must share (named on a mismatch).
JUDGING_CHAPTER = "03"
SHARED_PARAMETERS = "simulated users (03's crs_fresh_users; 06's simulator, confirm_sessions and confirm_seed)"


def judgments_of(table: pd.DataFrame, logs: Sequence[SessionLog], chapter: str = JUDGING_CHAPTER,
                 parameters: str = SHARED_PARAMETERS) -> list[JudgeRecord]:
    """The judgments of ``logs`` in ``table`` (:func:`judgment_table`, written by ``chapter``), in the logs' order;
    :class:`lib.tables.UpstreamMismatch` when a log has none or its transcript differs from the one judged (the
    two chapters simulated with different ``parameters``)."""
    expected = pd.DataFrame([{"system": log.system, "session_id": log.session_id,
                              "transcript_sha256": transcript_digest(log)} for log in logs])
    picked = check_upstream(table, expected, ["system", "session_id"], ["transcript_sha256"], "crs_judgments",
                            chapter, parameters)
    fields = list(JudgeRecord.model_fields)
    return [JudgeRecord.model_validate({f: _record_value(row[f]) for f in fields}) for _, row in picked.iterrows()]


def _record_value(value: Any) -> Any:
    """A parquet cell as the Python value a record holds (a missing value as None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def run_sessions(universe: ItemUniverse, systems: Sequence[CRS], seeds: Sequence[int],
                 simulator: SimulatorSettings = SimulatorSettings(), *, user_gateway: Gateway | None = None,
                 llm_user_sessions: int = 0, judge_gateway: Gateway | None = None, judge_sessions: int | None = None,
                 judgments: pd.DataFrame | None = None, config: MetricConfig = MetricConfig(),
                 embed: Embed | None = None, out_dir: Path | None = CRS_OUTPUTS) -> SimulationRun:
    """Simulate one session per seed with every system (:func:`simulate`), score them, judge them, and write the
    log and results.

    ``judge_gateway``: the rubric judge (None: every row's judge is ``not_judged``); ``judge_sessions``: judge only
    the first that many sessions of each system. ``judgments``: instead of a judge, the judgments an earlier chapter
    made of these very conversations (table ``crs_judgments``, :func:`judgments_of`).
    ``out_dir``: where ``sessions.jsonl`` and ``results.jsonl`` go (None: nothing is written)."""
    if judge_gateway is not None and judgments is not None:
        raise ValueError("give a judge gateway or the judgments made earlier, not both")
    logs, diagnostics = simulate(universe, systems, seeds, simulator, user_gateway=user_gateway,
                                 llm_user_sessions=llm_user_sessions)
    records = [not_judged() for _ in logs]
    if judgments is not None:
        records = judgments_of(judgments, logs)
    if judge_gateway is not None:
        # Logs are ordered system by system, sessions in seed order within each.
        judged = [i for i in range(len(logs)) if judge_sessions is None or i % len(seeds) < judge_sessions]
        verdicts = judge_conversations(judge_gateway, [logs[i].record()["conversation"] for i in judged],
                                       [f"{logs[i].system}:{logs[i].session_id}" for i in judged])
        for i, verdict in zip(judged, verdicts, strict=True):
            records[i] = verdict
    metrics, turns, shifts = evaluate_logs(logs, universe, config, embed)
    results = result_rows(logs, metrics, [seed for _ in systems for seed in seeds], diagnostics, records)
    if out_dir is not None:
        write_jsonl(out_dir / LOG_FILE.name, logs, SessionLog)
        write_jsonl(out_dir / RESULTS_FILE.name, results, ResultRow)
    return SimulationRun(logs, results, turns, shifts)


def read_run(out_dir: Path = CRS_OUTPUTS) -> tuple[list[SessionLog], list[ResultRow]]:
    """The session logs and result rows of a run, validated line by line."""
    return read_jsonl(out_dir / LOG_FILE.name, SessionLog), read_jsonl(out_dir / RESULTS_FILE.name, ResultRow)
