"""The plan printed before a run (lib.tools.profiles): calls from ledgers or a dry-run record, projected time."""
from __future__ import annotations

import json
from pathlib import Path

from lib.tools import profiles

CHAPTERS = ["01_a", "02_b"]


def write(folder: Path, name: str, record: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(record))


def full_profile(tmp_path: Path, chapters: dict, base: str, overlay: str) -> Path:
    """params.yaml and params.full.yaml with these texts, and a current dry-run record of profile full."""
    params = tmp_path / "params.yaml"
    params.write_text(base)
    (tmp_path / "params.full.yaml").write_text(overlay)
    write(tmp_path / "profiles", "full", {"date": "2026-11-24", "cpus": 2, "chapters": chapters,
                                          "parameters_sha256": profiles.parameters_digest(CHAPTERS, params, "full")})
    return params


def test_default_sizes_count_every_ledger_of_a_chapter_and_project_at_both_rates(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("01_a:\n  n: 3\n")
    write(tmp_path / "ledgers", "01_a", {"calls": 100, "requests": 101, "failures": {"timeout": 1},
                                         "prompt_tokens": 50_000, "completion_tokens": 4_000})
    write(tmp_path / "ledgers", "01_a-judge", {"calls": 20, "requests": 20, "failures": {},
                                               "prompt_tokens": 10_000, "completion_tokens": 2_000})
    write(tmp_path / "bench", "01_a", {"cold requests sent": 50, "cold s": 100.0, "measurements requests sent": 10,
                                       "measurements s": 20.0})
    frame, source = profiles.plan(CHAPTERS, None, 2.0, params, tmp_path / "ledgers", tmp_path / "profiles",
                                  tmp_path / "bench")
    assert frame["LLM calls"].tolist() == [120, 0, 120]
    # 60 requests in 120 s: 0.5 requests/s, so 120 calls take 4.0 min; at 2 calls/s 1.0 min
    assert frame["minutes at the embedded model's rate"].tolist() == [4.0, 0.0, 4.0]
    assert frame["minutes at 2 calls/s"].tolist() == [1.0, 0.0, 1.0]
    assert source.startswith("calls and tokens: the committed run's ledgers; the embedded model's rate 0.50 "
                             "requests/s")
    assert frame["prompt tokens"].tolist() == [60_000, 0, 60_000]
    assert frame["completion tokens"].tolist() == [6_000, 0, 6_000]
    # 60,000 in at $1/Mtok + 6,000 out at $10/Mtok = 0.06 + 0.06
    assert profiles.cost_text(frame, {"model-x": (1.0, 10.0)}).endswith("model-x 0.12.")


def test_a_profile_reads_its_dry_run_record_and_says_when_it_is_stale(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("01_a:\n  n: 3\n02_b:\n  k: 1\n")
    (tmp_path / "params.full.yaml").write_text("01_a:\n  n: 3000\n")
    frame, source = profiles.plan(CHAPTERS, "full", 10.0, params, tmp_path / "ledgers", tmp_path / "profiles",
                                  tmp_path / "bench")
    assert frame.empty and "no dry-run record" in source and "make dry-run PROFILE=full" in source
    full_profile(tmp_path, {"01_a": {"calls": 6000, "wall_s": 90.0, "peak_rss_mib": 700.0},
                            "02_b": {"calls": 0, "wall_s": 30.0, "peak_rss_mib": 900.0}},
                 "01_a:\n  n: 3\n02_b:\n  k: 1\n", "01_a:\n  n: 3000\n")
    write(tmp_path / "ledgers", "01_a", {"calls": 60, "requests": 60, "failures": {}, "prompt_tokens": 30_000,
                                         "completion_tokens": 600})
    frame, source = profiles.plan(CHAPTERS, "full", 10.0, params, tmp_path / "ledgers", tmp_path / "profiles",
                                  tmp_path / "bench")
    assert frame["LLM calls"].tolist() == [6000, 0, 6000]
    # the committed run's tokens per call (500 in, 10 out) times the profile's calls
    assert frame["prompt tokens"].tolist() == [3_000_000, 0, 3_000_000]
    assert frame["completion tokens"].tolist() == [60_000, 0, 60_000]
    assert "tokens: the committed run's tokens per call times these calls" in source
    assert frame["minutes at 10 calls/s"].tolist() == [10.0, 0.0, 10.0]
    assert frame["minutes at the embedded model's rate"].isna().all()
    assert frame["minutes without the LLM"].tolist() == [1.5, 0.5, 2.0]  # summed over chapters run one after another
    assert frame["peak MiB"].tolist() == [700, 900, 900]  # the largest, not a sum
    assert "STALE" not in source and "no make bench cold run recorded" in source
    (tmp_path / "params.full.yaml").write_text("01_a:\n  n: 4000\n")
    assert "STALE" in profiles.plan(CHAPTERS, "full", 10.0, params, tmp_path / "ledgers", tmp_path / "profiles",
                                    tmp_path / "bench")[1]


def test_the_plan_names_the_endpoint_of_each_role(monkeypatch):
    from lib.llm.gateway import Endpoint
    from lib.tools.profiles import endpoint_text

    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.org/v1/")
    monkeypatch.setenv("LLM_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("JUDGE_BASE_URL", "http://judge.example.org/v1")
    monkeypatch.setenv("JUDGE_MODEL", "judge-7b")
    assert endpoint_text(Endpoint.from_env("generator")) == "gpt-4o-mini at http://example.org/v1"
    assert endpoint_text(Endpoint.from_env("judge")) == "judge-7b at http://judge.example.org/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert endpoint_text(Endpoint.from_env("generator")).startswith("the embedded model qwen2.5")


def test_tokens_are_unknown_where_a_profile_calls_a_chapter_the_committed_run_never_called(tmp_path: Path) -> None:
    params = full_profile(tmp_path, {"01_a": {"calls": 40}, "02_b": {"calls": 5}}, "01_a:\n  n: 3\n",
                          "01_a:\n  n: 30\n")
    write(tmp_path / "ledgers", "01_a", {"calls": 4, "requests": 4, "failures": {}, "prompt_tokens": 400,
                                         "completion_tokens": 40})
    frame, _ = profiles.plan(CHAPTERS, "full", 10.0, params, tmp_path / "ledgers", tmp_path / "profiles",
                             tmp_path / "bench")
    assert frame["prompt tokens"].iloc[0] == 4_000 and frame["prompt tokens"].iloc[1:].isna().all()
    assert profiles.cost_text(frame).startswith("cost: unknown")
