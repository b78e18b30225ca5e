"""The cold-run record: which cache entries a cold run of one notebook starts with, and the sentence the chapter
prints from the record ``make bench COLD=<notebook>`` keeps."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lib import costs, paths
from lib.llm.cache import ResponseCache
from lib.tools import bench


def test_a_cold_run_starts_with_the_outputs_and_cache_entries_of_earlier_chapters(tmp_path, monkeypatch):
    outputs = tmp_path / "outputs"
    for folder in ("tables", "crs", "notebooks", "html", "ledgers", "bench"):
        (outputs / folder).mkdir(parents=True)
        (outputs / folder / "x.txt").write_text(folder)
    for ledger in ("03_judge_labeling", "07_validity", "07_validity-drift-c1"):
        (outputs / "ledgers" / f"{ledger}.json").write_text("{}")
    cache = outputs / "llm-cache.sqlite"
    ResponseCache(cache).put_all({key: {"notebook": notebook, "response": {}} for key, notebook in (
        ("aa01", "03_judge_labeling"), ("bb02", "06_crs_simulation-judge"), ("cc03", "07_validity"),
        ("dd04", "07_validity-drift-c1"))})
    (outputs / "llm-cache.sqlite.locks").mkdir()  # a live run's lock folder is not an output
    monkeypatch.setattr(paths, "OUTPUTS", outputs)
    monkeypatch.setattr(paths, "LLM_CACHE", cache)
    out = tmp_path / "cold"
    out.mkdir()
    # the keys earlier chapters ask for today decide, not the notebook that first wrote an entry: bb02 (written by
    # 06, no longer asked for there) stays out, cc03 (asked for by an earlier chapter) comes along
    assert bench.seed_cold_run("07_validity", out, {"aa01", "cc03"}) == 2
    assert dict(ResponseCache(out / "llm-cache.sqlite").items()) == {
        "aa01": {"notebook": "03_judge_labeling", "response": {}}, "cc03": {"notebook": "07_validity", "response": {}}}
    # earlier chapters' outputs and ledgers come along; the rendered report, later ledgers and bench records do not
    assert sorted(p.name for p in out.iterdir()) == ["crs", "ledgers", "llm-cache.sqlite", "tables"]
    assert sorted(p.name for p in (out / "ledgers").iterdir()) == ["03_judge_labeling.json"]


def test_the_cold_run_sentence_reads_the_record_against_the_budget(tmp_path):
    assert costs.cold_run("07_validity", tmp_path).startswith("No cold run of 07_validity is recorded")
    record = {"notebook": "07_validity", "date": "2026-11-24", "cpus": 2, "model": "m", "measurements s": 270.0,
              "measurements requests sent": 120, "cold s": 1170.0, "cold requests sent": 472, "warm s": 80.0,
              "cold requests not in the committed cache": 0}
    (tmp_path / "07_validity.json").write_text(json.dumps(record))
    assert costs.cold_run("07_validity", tmp_path) == (
        "Cold run of 07_validity (its own calls live, earlier chapters' from the cache; make bench, 2026-11-24, "
        "2 CPUs, m): 19.5 min (1,170.0 s) for 472 requests and its measurements, run before it, 4.5 min for 120 "
        "requests; 24.0 min with its measurements, over the chapter budget of 20 min; 0 of its requests are not in "
        "the committed cache.")
    lighter = {**record, "measurements s": 30.0}
    (tmp_path / "07_validity.json").write_text(json.dumps(lighter))
    assert "0.5 min for 120 requests; 20.0 min with its measurements, within the chapter budget" in costs.cold_run(
        "07_validity", tmp_path)
    # measurements that sent no request are not named, but their time counts, as in the sum over chapters
    idle = {**record, "cold s": 1195.0, "measurements s": 10.0, "measurements requests sent": 0}
    (tmp_path / "07_validity.json").write_text(json.dumps(idle))
    assert costs.cold_run("07_validity", tmp_path).endswith(
        "19.9 min (1,195.0 s) for 472 requests; 20.1 min with its measurements, over the chapter budget of 20 min; 0 "
        "of its requests are not in the committed cache.")
    (tmp_path / "07_validity.json").write_text(json.dumps({"notebook": "07_validity"}))
    with pytest.raises(KeyError):
        costs.cold_run("07_validity", tmp_path)  # a record without its figures is an error, not a default


def test_cold_runs_of_several_notebooks_add_up_against_their_budget(tmp_path):
    record = {"date": "2026-11-24", "cpus": 2, "model": "m", "measurements s": 0.0, "measurements requests sent": 0,
              "cold s": 600.0, "cold requests sent": 80, "cold requests not in the committed cache": 0}
    (tmp_path / "01.json").write_text(json.dumps(record))
    assert costs.cold_runs(["01", "02"], 20, tmp_path).startswith("No cold run of 02 is recorded")
    (tmp_path / "02.json").write_text(json.dumps({**record, "cold s": 30.0, "cold requests sent": 0,
                                                   "measurements s": 60.0, "measurements requests sent": 5}))
    assert costs.cold_runs(["01", "02"], 20, tmp_path) == (
        "Cold runs of 01 + 02 (make bench, 2026-11-24): 10.0 + 1.5 = 11.5 min for 85 requests, within their "
        "budget of 20 min.")
    assert costs.cold_runs(["01", "02"], 11, tmp_path).endswith("over their budget of 11 min.")
    (tmp_path / "02.json").write_text(json.dumps({**record, "cold s": 1230.0}))
    assert costs.cold_runs(["01", "02"], 90, tmp_path).endswith(  # a total within its budget, one chapter not
        "= 30.5 min for 160 requests, within their budget of 90 min. Over the chapter budget of 20 min: 02 (20.5 min).")
    assert costs.cold_runs(["01"], 12, tmp_path) == (
        "Cold run of 01 (make bench, 2026-11-24): 10.0 min for 80 requests, within its budget of 12 min.")


def test_prefix_share_and_rates_read_the_servers_own_counts(tmp_path):
    def entry(notebook: str, label: str, prompt: int, processed: int) -> dict:
        return {"notebook": notebook, "label": label, "response": {
            "usage": {"prompt_tokens": prompt},
            "timings": {"prompt_n": processed, "prompt_ms": processed * 20.0, "predicted_n": 3,
                        "predicted_ms": 300.0}}}

    entries = [entry("07_validity", "dl19:0", 100, 40), entry("07_validity", "dl19:1", 300, 60)]
    # 400 prompt tokens, 100 processed: 75% from the prefix cache
    assert bench._prefix_share(entries) == pytest.approx(75.0)
    assert np.isnan(bench._prefix_share([]))
    ResponseCache(tmp_path / "c.sqlite").put_all({"aa01": entries[0], "aa02": entries[1]})
    rates = bench.study_rates(tmp_path / "c.sqlite").iloc[0]
    assert (rates.notebook, rates.calls, rates.requests, rates.processed) == ("07_validity", "dl19", 2, 100)
    assert rates.cached_share == pytest.approx(0.75) and rates.prompt_tok_s == pytest.approx(50.0)
    assert rates.generation_tok_s == pytest.approx(10.0)


def test_a_warm_make_all_replays_every_step_in_order_and_records_each(tmp_path, monkeypatch):
    outputs = tmp_path / "outputs"
    (outputs / "tables").mkdir(parents=True)
    monkeypatch.setattr(paths, "OUTPUTS", outputs)
    monkeypatch.setattr(bench.pipeline, "notebook_names", lambda: ["01_a", "02_b"])
    ran = []

    def run(command, cwd, env, check, capture_output):
        assert env["LLM_MODE"] == "replay" and env["STUDY_OUTPUT_DIR"] != str(outputs)
        ran.append(command[2:])

    monkeypatch.setattr(bench.subprocess, "run", run)
    times = bench.warm_make_all()
    assert ran == [["lib.tools.profiles"], ["lib.tools.pipeline", "chapter", "01_a"],
                   ["lib.tools.pipeline", "chapter", "02_b"], ["lib.tools.pipeline", "book"]]
    assert list(times) == ["total s", "plan s", "01_a s", "02_b s", "book s"]
    record = json.loads((outputs / "bench" / "make_all_warm.json").read_text())
    assert set(record) == {"date", "cpus", *times}


def test_the_warm_make_all_sentence_reads_its_record(tmp_path):
    assert costs.warm_make_all(tmp_path).startswith("No warm make all is recorded")
    (tmp_path / "make_all_warm.json").write_text(json.dumps(
        {"date": "2026-11-28", "cpus": 2, "total s": 150.4, "plan s": 5.0, "01_a s": 20.0, "07_b s": 70.2,
         "book s": 30.0}))
    assert costs.warm_make_all(tmp_path) == (
        "A make all replaying the committed cache (make bench WARM_ALL=1, 2026-11-28, 2 CPUs) took 150 s; the longest "
        "steps: 07_b 70 s, book 30 s, 01_a 20 s.")
