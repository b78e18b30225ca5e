"""CRS simulation: the user simulator (state machine, schedules, the target-title guard), the systems
(constraint tracking, templates, the LLM CRS's post-filter and failures), the runner (known systems ordered
as expected, the echo caught by I, byte-identical reruns), and the log / results files (validated on write and
read) — LLM calls against the fake OpenAI endpoint."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from lib.crs.concepts import concept_field
from lib.crs.config import MetricConfig
from lib.crs.judge import judge_conversations
from lib.crs.records import JudgeRecord, ResultRow, SessionLog, read_jsonl, write_jsonl
from lib.crs.runner import judgment_table, read_run, run_sessions, simulate
from lib.crs.simulator import (
    SimulatorSettings,
    acceptable_utterance,
    describe,
    names_title,
    phrase_scripts,
    simulate_script,
    stateable_values,
)
from lib.crs.systems import (
    ASK_TEXT,
    CRS,
    echo_crs,
    llm_crs,
    memoryless_llm_crs,
    retrieval_template_crs,
    stale_template_crs,
    track_constraints,
)
from lib.crs.universe import load_universe
from lib.data import DataFormatError
from lib.llm.gateway import Endpoint, Gateway
from lib.tables import UpstreamMismatch
from tests.crs_tiny import tiny_universe
from tests.fakes import FakeOpenAI, Reply, always

SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def universe():
    return load_universe()


@pytest.fixture(scope="module")
def tiny():
    return tiny_universe()


def gateway_for(fake, cache_path):
    return Gateway(Endpoint(fake.base_url, "fake", "fake", embedded=False), cache_path=cache_path)


def candidate_titles(body):
    listing = body["messages"][-1]["content"].split("Candidates:\n")[1].split("\nUser's wishes:")[0]
    return [re.sub(r"^\d+\. ", "", line).rsplit(": ", 1)[0] for line in listing.splitlines()]


def fake_llm(body, n):
    """Answers each kind of call by its schema: the CRS picks its first candidate and invents a second title,
    the user says its wishes by name, the judge gives 4, 3, 5."""
    schema = body["response_format"]["json_schema"]["name"]
    if schema == "LLMRecommendation":
        return Reply(json.dumps({"titles": [candidate_titles(body)[0], "Made Up Movie (1999)"],
                                 "reason": "a fine pick"}))
    if schema == "UserUtterance":
        wishes = body["messages"][-1]["content"].split("Wishes: ")[1].splitlines()[0]
        return Reply(json.dumps({"text": "I would love "
                                 + " and ".join(w.rsplit(" (", 1)[0] for w in wishes.split("; ")) + "."}))
    return Reply('{"coherence": 4, "personalisation": 3, "proactiveness": 5}')


# --- simulator -------------------------------------------------------------------------------------------------

def test_shift_schedules():
    rng = np.random.default_rng(0)
    assert SimulatorSettings(n_turns=8, shift_turns=(6, 3)).schedule(rng) == (3, 6)
    with pytest.raises(ValueError, match="shorter than 2 turns"):
        SimulatorSettings(n_turns=8, shift_turns=(1,)).schedule(rng)
    random = SimulatorSettings(n_turns=10, shift_turns=None, n_random_shifts=3, min_segment_turns=2)
    drawn = [random.schedule(np.random.default_rng(seed)) for seed in range(20)]
    assert drawn == [random.schedule(np.random.default_rng(seed)) for seed in range(20)]  # seeded
    assert len(set(drawn)) > 1
    assert all(min(np.diff((0, *d, 10))) >= 2 for d in drawn)


def test_script_follows_the_state_machine(universe):
    for seed in range(10):
        script = simulate_script(universe, SimulatorSettings(), seed)
        turns = script.turns
        assert [t.kind for t in turns][:3] == ["open", "refine", "refine"]
        assert [e.turn for e in script.shift_events] == [t.turn for t in turns if t.shift] == [3, 6]
        for plan in turns:
            assert set(plan.stated) <= set(plan.preference) <= universe.concepts_of[plan.target]
            assert not set(plan.dropped) & set(plan.preference)
        for event in script.shift_events:
            before, at = turns[event.turn - 1], turns[event.turn]
            assert event.from_field == before.focus and event.to_field == at.focus
            assert at.preference == event.values and set(event.dropped) == set(before.preference) - set(event.values)
            # The new target does not have the value the user was focused on.
            assert before.target != at.target
            assert not {c for c in before.preference if concept_field(c) == before.focus} \
                & universe.concepts_of[at.target]
        assert script == simulate_script(universe, SimulatorSettings(), seed)  # deterministic


def test_shifts_keep_the_shared_wishes_and_are_real_changes(universe):
    settings = SimulatorSettings(shift_turns=None)
    partial = 0
    for seed in range(10):
        script = simulate_script(universe, settings, seed)
        for event in script.shift_events:
            before, at = script.turns[event.turn - 1], script.turns[event.turn]
            assert set(event.kept) <= set(before.preference) & universe.concepts_of[at.target]
            assert set(at.preference) == set(event.values) == {*event.kept, *at.stated}
            assert set(event.dropped) == set(before.preference) - set(event.kept)
            # A real change: the old focus value is abandoned and the new wish was not wanted before.
            assert event.dropped and set(event.values) - set(event.kept) - set(before.preference)
            partial += bool(event.kept)
    assert partial > 5  # most draws share the genre with the old target


def test_quiet_shifts_carry_no_cue_word(universe):
    from lib.crs.systems import has_shift_cue

    for share, cue in ((1.0, False), (0.0, True)):
        for seed in range(6):
            script = simulate_script(universe, SimulatorSettings(shift_turns=None, quiet_shift_share=share), seed)
            assert all(has_shift_cue(plan.template_text) == cue for plan in script.turns if plan.shift)
            assert not any(has_shift_cue(plan.template_text) for plan in script.turns if not plan.shift)
    with pytest.raises(ValueError, match="quiet_shift_share"):
        SimulatorSettings(quiet_shift_share=1.5)


def test_the_user_names_a_liked_movie_that_is_no_target(universe):
    from lib.crs.simulator import user_text

    for seed in range(6):
        script = simulate_script(universe, SimulatorSettings(liked_share=1.0), seed)
        first = script.turns[0]
        if first.liked is None:  # only when no other movie carries the first wish
            assert universe.postings[first.stated[0]] <= set(script.targets)
            continue
        assert first.liked not in script.targets
        assert first.stated[0] in universe.concepts_of[first.liked]
        text = user_text(first, first.template_text, None, None, universe, script.targets)
        assert text.endswith(f"I loved {universe.names[first.liked]}.")
        assert not any(names_title(text, universe, t) for t in script.targets)
        assert all(plan.liked is None for plan in script.turns[1:])
    assert simulate_script(universe, SimulatorSettings(liked_share=0.0), 0).turns[0].liked is None


def test_a_liked_movie_recommended_back_is_rejected(universe):
    from lib.crs.simulator import feedback_prefix

    heat = universe.find_title("Heat (1995)")
    wanted = sorted(c for c in universe.concepts_of[heat] if c.startswith("genre="))[:1]
    assert feedback_prefix(wanted, "Try Heat (1995).", universe) == "That sounds good."
    assert feedback_prefix(wanted, "Try Heat (1995).", universe, liked=heat) == "Not quite what I'm after."


def test_sessions_are_not_replicas(universe):
    settings = SimulatorSettings(shift_turns=None, quiet_shift_share=0.5)
    scripts = [simulate_script(universe, settings, seed) for seed in range(6)]
    shapes = {tuple((p.kind, len(p.stated), p.template_text.split()[0]) for p in s.turns) for s in scripts}
    assert len(shapes) == len(scripts)


def test_template_utterances_say_their_concepts_and_no_title(universe):
    for seed in range(10):
        script = simulate_script(universe, SimulatorSettings(), seed)
        for plan in script.turns:
            assert acceptable_utterance(plan.template_text, plan, universe, script.targets), plan


def test_simulator_never_emits_a_target_title(universe):
    for seed in range(60):
        script = simulate_script(universe, SimulatorSettings(n_turns=10, shift_turns=None), seed)
        assert not any(names_title(plan.template_text, universe, target)
                       for plan in script.turns for target in script.targets)


def test_a_value_that_spells_the_title_is_never_stated(tiny):
    values = stateable_values(tiny, "12")  # "Vampires (1998)", whose plot keyword is "vampire(s)"
    assert "plot" not in values and values["genre"] == ("genre=action", "genre=horror")


def test_llm_phrasing_that_leaks_a_title_falls_back_to_the_template(universe, tmp_path):
    scripts = [simulate_script(universe, SimulatorSettings(), seed) for seed in SEEDS]
    titles = [universe.items.loc[universe.position[s.targets[0]], "title"] for s in scripts]

    def leaky(body, n):  # the fake knows the titles; the prompt does not contain them
        return Reply(json.dumps({"text": f"I want something like {titles[0]}"}))

    with FakeOpenAI(leaky) as fake:
        phrased = phrase_scripts(scripts, universe, gateway_for(fake, tmp_path / "cache"), llm_sessions=1)
    assert [p for _, p in phrased[0]] == ["template_fallback"] * 8
    assert [text for text, _ in phrased[0]] == [t.template_text for t in scripts[0].turns]
    assert all(p == "template" for _, p in phrased[1])
    prompts = " ".join(m["content"] for body in fake.requests for m in body["messages"])
    assert not any(names_title(prompts, universe, t) for s in scripts for t in s.targets)


def test_a_cut_or_overreaching_llm_utterance_falls_back(universe, tmp_path):
    scripts = [simulate_script(universe, SimulatorSettings(), 0)]
    wish = describe(scripts[0].turns[0].stated, universe)

    for text in (f"I would love {wish} and", f"I would love {wish}, a horror one."):
        plan = scripts[0].turns[0]
        assert not acceptable_utterance(text, plan, universe, scripts[0].targets), text
    assert acceptable_utterance(f"I would love {wish}.", scripts[0].turns[0], universe, scripts[0].targets)


def test_an_llm_shift_keeps_its_planned_form(universe):
    from dataclasses import replace

    script = simulate_script(universe, SimulatorSettings(), 0)
    shift = next(p for p in script.turns if p.shift)
    wish = describe(shift.stated, universe)
    with_cue, quiet = f"Actually, I've changed my mind: {wish}.", f"Now I'd like {wish}."
    assert acceptable_utterance(with_cue, shift, universe, script.targets)
    assert not acceptable_utterance(quiet, shift, universe, script.targets)  # the planned cue was dropped
    planned_quiet = replace(shift, quiet=True)
    assert acceptable_utterance(quiet, planned_quiet, universe, script.targets)
    assert not acceptable_utterance(with_cue, planned_quiet, universe, script.targets)
    refine = next(p for p in script.turns if p.kind == "refine")
    refined = describe(refine.stated, universe)
    assert acceptable_utterance(f"Also {refined}.", refine, universe, script.targets)
    assert not acceptable_utterance(f"Forget it, {refined}.", refine, universe, script.targets)  # no shift planned


def test_a_reason_cut_by_the_cap_is_trimmed_to_its_last_clause():
    from lib.crs.systems import REASON_CAP, complete_reason

    cut = "Both films are directed by Richard Fleischer and written by Leslie Bricusse, and both have a strong,"
    assert len(cut) >= REASON_CAP - 2
    assert complete_reason(cut) == cut[:-1] + "."  # the clause the model finished, to its last mark
    no_mark = "A comedy starring Charlie Sheen and Lloyd Bridges directed by Jim Abrahams and written by Pat Profft"
    assert complete_reason(no_mark) == no_mark + "…"  # no word dropped: a complete one cannot be told from a cut one
    early = "The Wizard of Oz (1982) is a classic animated film by Fumihiko Takayama starring Aileen Quinn,"
    assert len(early) < REASON_CAP - 2 and complete_reason(early) == early[:-1] + "."  # stopped short of the cap
    assert complete_reason("A short reason") == "A short reason"  # under the cap: as said
    assert complete_reason(cut[:97] + ".") == cut[:97] + "."      # ends a sentence: as said


def test_llm_phrasing_is_kept_when_it_names_every_wish(universe, tmp_path):
    scripts = [simulate_script(universe, SimulatorSettings(), seed) for seed in SEEDS]
    with FakeOpenAI(fake_llm) as fake:
        phrased = phrase_scripts(scripts, universe, gateway_for(fake, tmp_path / "cache"), llm_sessions=2)
    kept = [(scripts[i].turns[t], text) for i in range(2) for t, (text, how) in enumerate(phrased[i]) if how == "llm"]
    assert kept and len(fake.requests) == 16
    assert all(acceptable_utterance(text, plan, universe, scripts[0].targets + scripts[1].targets)
               for plan, text in kept)


# --- systems ---------------------------------------------------------------------------------------------------

def test_constraint_tracking_policies(tiny):
    texts = ["I want a comedy.", "Could it also be a movie with Tom Hanks?", "Actually, forget that: a horror movie."]
    assert track_constraints(texts, tiny, "update") == ("genre=horror",)
    assert track_constraints(texts, tiny, "last_turn") == ("genre=horror",)
    assert track_constraints(texts, tiny, "accumulate") == ("actor=tom hanks", "genre=comedy", "genre=horror")
    # Without a cue a new value replaces the old one on its field only.
    assert track_constraints(["a comedy with Tom Hanks", "a drama please"], tiny, "update") == \
        ("actor=tom hanks", "genre=drama")


def history(*user_texts):
    turns = []
    for text in user_texts:
        turns += [{"speaker": "USER", "text": text}, {"speaker": "SYSTEM", "text": "ok"}]
    return turns[:-1]


def test_template_systems(tiny):
    template, stale = retrieval_template_crs(tiny), stale_template_crs(tiny)
    [ask] = template.respond([history("Hello!")], [0])
    assert ask.text == ASK_TEXT and ask.constraints == ()
    [exact] = template.respond([history("a western")], [0])
    assert exact.text == "Matching genre western: Unforgiven (1992)."
    # Tiny universe: nothing is both a western and a Tom Hanks film; the stale system still holds the western.
    [closest] = stale.respond([history("a western", "Forget that, a movie with Tom Hanks")], [0])
    assert closest.text.startswith("Nothing matches all of actor Tom Hanks, genre western; closest: Unforgiven")


def test_llm_crs_filters_titles_outside_the_universe(tiny, tmp_path):
    def answer(body, n):  # by content: the two calls run in parallel, in either order
        if "genre comedy" in body["messages"][-1]["content"]:
            return Reply(json.dumps({"titles": ["Splash (1984)", "Made Up Movie (1999)"], "reason": "mermaid fun"}))
        return Reply(json.dumps({"titles": ["Heat (1995)"], "reason": "a classic"}))

    with FakeOpenAI(answer) as fake:
        system = llm_crs(gateway_for(fake, tmp_path / "cache"), tiny)
        first, second = system.respond([history("I want a comedy with Tom Hanks"),
                                         history("I want a drama with Tom Hanks")], [0, 1])
    assert first.text == "Splash (1984): mermaid fun"
    assert (first.proposed, first.off_universe, first.off_candidates) == (2, 1, 0)
    assert second.text == "Heat (1995): a classic"  # in the universe but not retrieved: kept and counted
    assert (second.proposed, second.off_universe, second.off_candidates) == (1, 0, 1)
    assert first.constraints == ("actor=tom hanks", "genre=comedy")
    # One shared system message first, then the candidates: the server reuses the cached prefix.
    assert fake.requests[0]["messages"][0] == fake.requests[1]["messages"][0]
    [comedy] = [r for r in fake.requests if "genre comedy" in r["messages"][1]["content"]]
    assert comedy["messages"][1]["content"].startswith("Candidates:\n") and set(candidate_titles(comedy)) == \
        {"Big (1988)", "Splash (1984)", "Sleepless in Seattle (1993)"}
    assert fake.requests[0]["max_tokens"] <= 80


def test_a_failed_llm_call_is_an_empty_reply_with_its_failure(tiny, tmp_path):
    with FakeOpenAI(always("not json")) as fake:
        [reply] = llm_crs(gateway_for(fake, tmp_path / "cache"), tiny).respond([history("a comedy")], [0])
    assert reply.text == "" and reply.failure_kind == "invalid_json"


def test_memoryless_llm_crs_sees_only_the_last_turn(tiny, tmp_path):
    with FakeOpenAI(always(json.dumps({"titles": ["Cast Away (2000)"], "reason": "Tom Hanks alone"}))) as fake:
        [reply] = memoryless_llm_crs(gateway_for(fake, tmp_path / "cache"), tiny).respond(
            [history("I want a drama", "with Tom Hanks please")], [0])
    assert reply.constraints == ("actor=tom hanks",)
    user = fake.requests[0]["messages"][1]["content"]
    assert "User's wishes: actor Tom Hanks\nUser's last message: with Tom Hanks please" in user


# --- runner and files ------------------------------------------------------------------------------------------

def spy(seen):
    def respond(histories, seeds):
        seen.extend(turn for h in histories for turn in h)
        return echo_crs().respond(histories, seeds)
    return CRS("spy", respond)


def run(universe, gateway, out_dir, seen=None):
    systems = [llm_crs(gateway, universe), retrieval_template_crs(universe), memoryless_llm_crs(gateway, universe),
               stale_template_crs(universe), echo_crs(), *([spy(seen)] if seen is not None else [])]
    return run_sessions(universe, systems, SEEDS, user_gateway=gateway, llm_user_sessions=1, judge_gateway=gateway,
                        judge_sessions=2, config=MetricConfig(legacy_method="jaccard"), out_dir=out_dir)


def test_run_orders_systems_of_known_behaviour(universe, tmp_path):
    seen: list[dict] = []
    with FakeOpenAI(fake_llm) as fake:
        result = run(universe, gateway_for(fake, tmp_path / "cache"), tmp_path / "out", seen)
    means = result.rows.groupby("system")[["copy_ratio", "tas", "recovery_rate", "interference", "cas"]].mean()
    # The echo copies everything: highest I by far, and the copy penalty puts its TAS last.
    assert means["copy_ratio"].idxmax() == "echo" and means.loc["echo", "copy_ratio"] == 1.0
    assert (means.drop(["echo", "spy"])["copy_ratio"] < 0.5).all()
    assert means.loc["retrieval_template", "tas"] > means.loc["stale_template", "tas"] > means.loc["echo", "tas"]
    assert means.loc["retrieval_template", "recovery_rate"] > means.loc["stale_template", "recovery_rate"]
    assert means.loc["stale_template", "interference"] > means.loc["retrieval_template", "interference"]
    assert means.loc["retrieval_template", "cas"] > means.loc["stale_template", "cas"]
    # The fake LLM invents one title per call: every one is dropped and counted.
    llm_rows = result.rows[result.rows["system"] == "llm"]
    assert (llm_rows["titles_off_universe"] == llm_rows["titles_proposed"] / 2).all()
    assert (llm_rows["titles_off_universe"] > 0).all()
    # Judge: the first two sessions of each system, scores as the fake gave them; the third is not judged.
    judged = result.rows[result.rows["judge_ok"]]
    assert len(judged) == 2 * 6 and set(judged["judge_coherence"]) == {4}
    assert set(result.rows.loc[~result.rows["judge_ok"], "judge_failure_kind"]) == {"not_judged"}
    # Systems saw speakers and texts only; no user turn names a target.
    assert all(set(turn) == {"speaker", "text"} for turn in seen)
    for log in result.logs:
        users = log.conversation[0::2]
        targets = {u.user_meta.target for u in users}
        assert not any(names_title(u.text, universe, t) for u in users for t in targets)
    assert (result.rows.loc[result.rows["session_id"] == "s0", "llm_user_turns"] > 0).all()
    logs, results = read_run(tmp_path / "out")
    assert logs == result.logs and results == result.results


def test_rerun_writes_the_same_bytes(universe, tmp_path):
    with FakeOpenAI(fake_llm) as fake:
        gateway = gateway_for(fake, tmp_path / "cache")
        run(universe, gateway, tmp_path / "first")
        run(universe, gateway, tmp_path / "second")
    for name in ("sessions.jsonl", "results.jsonl"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def log_record(**changes):
    record = {"session_id": "s0", "system": "echo", "true_genre": "comedy", "shift_events": [],
              "conversation": [{"speaker": "USER", "text": "a comedy",
                                "user_meta": {"turn": 0, "kind": "open", "focus": "genre", "stated": ["genre=comedy"],
                                              "preference": ["genre=comedy"], "dropped": [], "shift": False,
                                              "phrasing": "template", "target": "1", "liked": None, "quiet": False}},
                               {"speaker": "SYSTEM", "text": "a comedy", "constraints": []}]}
    return record | changes


def test_logs_are_validated_on_write(tmp_path):
    path = tmp_path / "sessions.jsonl"
    write_jsonl(path, [log_record()], SessionLog)
    assert read_jsonl(path, SessionLog)[0].record() == log_record()
    bad = log_record(conversation=log_record()["conversation"][:1])
    with pytest.raises(ValueError, match=r"record 1 is not a valid SessionLog: .*alternate USER and SYSTEM"):
        write_jsonl(tmp_path / "other.jsonl", [log_record(), bad], SessionLog)
    assert not (tmp_path / "other.jsonl").exists()
    with pytest.raises(ValueError, match="shift_events turns"):
        SessionLog.model_validate(log_record(shift_events=[{"turn": 0, "from": "genre", "to": "actor",
                                                            "values": ["actor=tom hanks"], "kept": [], "dropped": []}]))
    with pytest.raises(ValueError, match=r"string_pattern_mismatch|should match pattern"):
        SessionLog.model_validate(log_record(conversation=[log_record()["conversation"][0],
                                                           {"speaker": "SYSTEM", "text": "x",
                                                            "constraints": ["mood=happy"]}]))


def test_malformed_lines_are_named_by_file_and_line(tmp_path):
    path = tmp_path / "sessions.jsonl"
    write_jsonl(path, [log_record(), log_record(session_id="s1")], SessionLog)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"session_id": "s2", "conversation": [\n')
    with pytest.raises(DataFormatError, match=rf"^{re.escape(str(path))}:3: invalid JSON"):
        read_jsonl(path, SessionLog)
    path.write_text(json.dumps(log_record()) + "\n" + json.dumps({"system": "echo"}) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r":2: not a valid SessionLog: session_id: Field required"):
        read_jsonl(path, SessionLog)
    path.write_text(json.dumps(log_record()) + "\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r":2: blank line"):
        read_jsonl(path, SessionLog)


def result_record(**changes):
    record = {"system": "echo", "session_id": "s0", "seed": 0, "n_turns": 8, "n_shifts": 2, "cc": 0.5, "cr": 1.0,
              "copy_ratio": 1.0, "tas": -0.25, "recovery_rate": 0.0, "recovery_delay": None, "interference": 0.0,
              "cas": 0.125, "missing": 3, "hallucinated": 0, "scored_turns": 8, "failed_turns": 0,
              "legacy_boundaries": [3], "legacy_tp": 1, "legacy_pk": 0.2, "titles_proposed": 0,
              "titles_off_universe": 0, "titles_off_candidates": 0, "llm_user_turns": 0, "template_fallback_turns": 0,
              "judge": {"ok": False, "failure_kind": "not_judged"}}
    return record | changes


def test_results_are_validated_on_write_and_read(tmp_path):
    path = tmp_path / "results.jsonl"
    write_jsonl(path, [result_record()], ResultRow)
    assert read_jsonl(path, ResultRow)[0].record() == ResultRow.model_validate(result_record()).record()
    with pytest.raises(ValueError, match="record 0 is not a valid ResultRow: tas"):
        write_jsonl(path, [result_record(tas=float("nan"))], ResultRow)  # undefined is null, never NaN
    path.write_text(json.dumps(result_record(judge={"ok": True, "coherence": 4})) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"results.jsonl:1: not a valid ResultRow: judge: .*all three scores"):
        read_jsonl(path, ResultRow)


def test_judge_scores_and_failures(tmp_path):
    conversation = log_record()["conversation"]
    with FakeOpenAI(always('{"coherence": 4, "personalisation": 2, "proactiveness": 5}')) as fake:
        [ok] = judge_conversations(gateway_for(fake, tmp_path / "a"), [conversation])
    assert (ok.ok, ok.coherence, ok.personalisation, ok.proactiveness, ok.model) == (True, 4, 2, 5, "fake")
    assert ok.scored_by == "argmax" and fake.requests[0]["top_logprobs"] == 5  # the fake sends no logprobs
    assert "Recommender: a comedy" in fake.requests[0]["messages"][1]["content"]
    with FakeOpenAI(always('{"coherence": 9, "personalisation": 2, "proactiveness": 5}')) as fake:
        [failed] = judge_conversations(gateway_for(fake, tmp_path / "b"), [conversation])
    assert not failed.ok and failed.coherence is None and failed.failure_kind == "schema_violation"
    with pytest.raises(ValidationError):
        JudgeRecord(ok=True, coherence=4)


def test_judgments_made_earlier_give_the_rows_of_judging_in_the_run_and_must_be_of_the_same_conversations(
        universe, tmp_path):
    systems = [retrieval_template_crs(universe), stale_template_crs(universe), echo_crs()]
    settings = SimulatorSettings(shift_turns=None, quiet_shift_share=0.5)
    scores = iter(range(1, 100))

    def varied(body, n):  # a different score for every conversation, so a swapped row would show
        return Reply(json.dumps({"coherence": next(scores) % 5 + 1, "personalisation": 3, "proactiveness": 2}))

    with FakeOpenAI(varied) as fake:
        gateway = gateway_for(fake, tmp_path / "cache")
        judged_here = run_sessions(universe, systems, SEEDS, settings, judge_gateway=gateway, out_dir=None)
        logs, _ = simulate(universe, systems, SEEDS, settings)
        table = judgment_table(gateway, logs)  # the same requests: cache hits
    assert len(fake.requests) == len(systems) * len(SEEDS)
    table.to_parquet(tmp_path / "crs_judgments.parquet", index=False)
    read = pd.read_parquet(tmp_path / "crs_judgments.parquet")
    judged_before = run_sessions(universe, systems, SEEDS, settings, judgments=read.iloc[::-1], out_dir=None)
    assert judged_before.rows.equals(judged_here.rows)
    assert judged_here.rows.judge_coherence.nunique() > 1
    with pytest.raises(UpstreamMismatch, match="transcript_sha256"):  # other users' settings: other transcripts
        run_sessions(universe, systems, SEEDS, SimulatorSettings(shift_turns=None, quiet_shift_share=0.0),
                     judgments=read, out_dir=None)
    with pytest.raises(UpstreamMismatch, match="missing"):
        run_sessions(universe, systems, [*SEEDS, 9], settings, judgments=read, out_dir=None)
    with pytest.raises(ValueError, match="not both"):
        run_sessions(universe, systems, SEEDS, settings, judge_gateway=gateway, judgments=read, out_dir=None)


def test_simulator_settings_from_a_notebooks_parameters():
    params = {"n_turns": 8, "shift_turns": [6, 3], "n_random_shifts": 2, "quiet_shift_share": 0.5, "liked_share": 0.5}
    assert SimulatorSettings.from_params(params) == SimulatorSettings(8, (6, 3), 2, 2, 0.5, 0.5)
    assert SimulatorSettings.from_params({**params, "shift_turns": None}).shift_turns is None


def letter_embed(texts):
    """A small fake of MiniLM: unit vectors of letter counts."""
    vectors = np.array([[text.lower().count(ch) for ch in "abcdefghijklmnopqrstuvwxyz"] for text in texts], float)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_figure_tables_from_a_template_run(universe):
    from lib.crs import summaries

    result = run_sessions(universe, [retrieval_template_crs(universe), stale_template_crs(universe), echo_crs()],
                          SEEDS, embed=letter_embed, out_dir=None)
    rows = result.rows
    assert rows["legacy_pk"].notna().all()  # the injected embedding was used for the legacy segments
    by_window = summaries.recovery_by_window(result.shifts, [1, 2, 3, 5]).pivot(index="window", columns="system")
    assert (by_window.diff().dropna() >= 0).all().all()  # a longer window never recovers fewer shifts
    ablation = summaries.ablation(result.turns, rows).set_index(["system", "variant"])["score"]
    assert ablation["echo", "tas"] == pytest.approx(rows.loc[rows["system"] == "echo", "tas"].mean(), abs=1e-6)
    assert ablation["echo", "cas"] == pytest.approx(rows.loc[rows["system"] == "echo", "cas"].mean(), abs=1e-6)
    assert ablation["echo", "cc_only"] == pytest.approx(rows.loc[rows["system"] == "echo", "cc"].mean(), abs=1e-6)
    assert ablation["echo", "tas_without_copy"] > ablation["stale_template", "tas_without_copy"]  # I catches it
    radar = summaries.component_means(rows)
    assert list(radar.index) == ["retrieval_template", "stale_template", "echo"]
    assert radar.loc["echo", "no_copy"] == 0.0 and radar.loc["stale_template", "stability"] < 1
    timeline = summaries.turn_timeline(result.turns, "echo", "s0")
    assert len(timeline) == 8 * 3 and timeline["shift"].sum() == 2 * 3
    stale = summaries.concept_errors(result.turns, "stale", k=2)
    assert set(stale["system"]) <= {"retrieval_template", "stale_template"} and (stale["count"] > 0).all()
    points, rho = summaries.tas_vs_judge(rows)
    assert points.empty and rho["n"] == 0  # nothing judged in this run
