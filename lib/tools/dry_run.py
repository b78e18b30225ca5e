"""Every chapter at a profile's sizes against an instant fake endpoint: does the pipeline carry those sizes, and what
does each chapter cost besides the LLM?

``python -m lib.tools.dry_run [--profile full]`` (``make dry-run PROFILE=full``) starts the fake endpoint of
:mod:`lib.tools.fake_endpoint` and runs each chapter in order as ``make NN`` does (``python -m lib.tools.pipeline
chapter NAME``: its measurements, then its notebook) in a temporary output folder seeded with the committed inputs
(as a clone has them), with an empty LLM cache, ``LLM_MODE=live`` and both roles (generator and judge) pointed at the
fake. Per chapter it records:

* ``calls``, ``requests``, ``failures``: summed over the ledgers the chapter wrote (its own and its side ledgers
  ``<chapter>-*.json``); ``http_requests``: what the fake received (transport retries included);
* ``wall_s``: the chapter's wall time, which with an instant endpoint is its time without LLM latency;
* ``peak_rss_mib``: the largest resident set of the chapter's processes (the pipeline and its notebook kernel),
  from the kernel's accounting of the waited-for process tree (``wait4``), so no peak falls between samples.

It prints the table and writes the record ``outputs/profiles/<profile>.json`` (``default`` without a profile),
which ``make plan`` reads (:mod:`lib.tools.profiles`). A chapter that fails stops the run with its log's tail and a
non-zero exit naming it, and no record is written. A chapter still running after ``--chapter-limit-min`` is stopped
(its process group killed) and so is the run: the chapters measured so far and the stopped one (its time and the
requests it had sent) go to ``outputs/profiles/<profile>.partial.json``, which ``make plan`` does not read, since a
partial record would pass for the profile's counts. ``--chapters`` measures only the chapters named (chapters
that read an unnamed one then read its committed outputs); their rows join those of an earlier partial record made
at the same parameters, and the record is complete, and written as ``<profile>.json``, once every chapter has a row
and none was stopped. So a chapter stopped at the limit need not cost the measurement of the chapters after it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lib import paths
from lib.embeddings import STORE_ENV
from lib.paths import shown
from lib.tools import pipeline, profiles
from lib.tools.fake_endpoint import MODEL, FakeEndpoint

ENDPOINT = ("lib.tools.fake_endpoint: instant, schema-valid answers drawn from each request's hash, logprobs for "
            "the graded fields; wall_s is each chapter's time without LLM latency")
# Output folders a chapter run makes rather than reads: not seeded into the temporary folder.
MADE_BY_RUNS = {paths.LLM_CACHE.name, paths.EXECUTED_NOTEBOOKS.name, paths.HTML.name, paths.LEDGERS.name,
                profiles.PROFILES.name}
LOG_TAIL_LINES = 30


class ChapterFailed(RuntimeError):
    """A chapter's pipeline run exited non-zero; the message names it and holds its log's tail."""


class ChapterStopped(RuntimeError):
    """A chapter passed the time limit and was stopped; ``record`` holds what the run measured until then."""

    def __init__(self, message: str, record: dict[str, Any]) -> None:
        super().__init__(message)
        self.record = record


def seed_inputs(out: Path, committed: Path = paths.OUTPUTS) -> None:
    """Copy the committed output folders a chapter reads but no run makes (earlier runs' CRS logs, the cold-run
    records, tables) into ``out``, as a fresh clone has them; each chapter then rewrites what it makes."""
    if not committed.exists():
        return
    for folder in committed.iterdir():
        if folder.is_dir() and folder.name not in MADE_BY_RUNS:
            shutil.copytree(folder, out / folder.name)


def fake_environment(out: Path, base_url: str) -> dict[str, str]:
    """The environment of a chapter run: outputs, a fresh cache and a fresh embedding store in ``out`` (MiniLM's
    time counts as on a new machine), live mode, both roles at the fake."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("JUDGE_BASE_URL", "JUDGE_API_KEY", "JUDGE_MODEL", "LLM_CACHE_DIR")}
    return {**env, "STUDY_OUTPUT_DIR": str(out), "LLM_CACHE": str(out / paths.LLM_CACHE.name), "LLM_MODE": "live",
            STORE_ENV: str(out / paths.EMBEDDING_STORE.name),
            "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "dry-run", "LLM_MODEL": MODEL,
            # the kernels import lib from this checkout, whichever one the venv installed
            "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.ROOT), os.environ.get("PYTHONPATH")]))}


def run_chapter(name: str, command: Sequence[str], env: dict[str, str], log: Path, limit_s: float | None = None
                ) -> tuple[float, float, bool]:
    """Run one chapter's ``command`` with its output in ``log``; returns its wall seconds, the peak resident set in
    MiB of its largest process, and whether it was stopped at ``limit_s``. Raises :class:`ChapterFailed` when it
    exits non-zero on its own."""
    start = time.monotonic()
    with log.open("wb") as sink:
        # its own process group, stopped as one; the notebook kernel (a session of its own) exits with its parent
        process = subprocess.Popen(command, cwd=paths.ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        timer = threading.Timer(limit_s, os.killpg, (process.pid, signal.SIGKILL)) if limit_s else None
        if timer:
            timer.start()
        # wait4 reports the child's resource usage including its own waited-for children (the notebook kernel);
        # ru_maxrss is in KiB on Linux
        _, status, usage = os.wait4(process.pid, 0)
        stopped = timer is not None and timer.finished.is_set()  # set when it fired (checked before cancel)
        if timer:
            timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    wall_s = time.monotonic() - start
    if stopped:
        return wall_s, usage.ru_maxrss / 1024, True
    if process.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        raise ChapterFailed(f"chapter {name} failed (exit {process.returncode}) after {wall_s:.0f} s; the end of "
                            f"its log:\n{tail}")
    return wall_s, usage.ru_maxrss / 1024, False


def dry_run(profile: str | None, notebooks: Path = paths.NOTEBOOKS, params_file: Path = pipeline.PARAMS_FILE,
            committed: Path = paths.OUTPUTS, keep: Path | None = None, limit_s: float | None = None,
            only: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every chapter of ``notebooks`` (those in ``only`` when given) at ``profile``'s sizes against the fake
    (module docstring) and return the record. ``committed``: the outputs whose inputs seed the temporary folder;
    ``keep``: a folder to use instead of a temporary one (and to leave behind for inspection); ``limit_s``: the
    time a chapter may take (:class:`ChapterStopped` past it)."""
    chapters = pipeline.notebook_names(notebooks)
    unknown = sorted(set(only or ()) - set(chapters))
    if unknown:
        raise SystemExit(f"error: no chapter {', '.join(unknown)} in {shown(notebooks)}")
    rows: dict[str, dict[str, Any]] = {}
    record = {"profile": profile or profiles.DEFAULT,
              "parameters_sha256": profiles.parameters_digest(chapters, params_file, profile),
              "date": datetime.datetime.now(datetime.UTC).date().isoformat(), "cpus": os.cpu_count() or 1,
              "endpoint": ENDPOINT, "chapters": rows, "complete": only is None or set(only) == set(chapters)}
    with tempfile.TemporaryDirectory(prefix="dry-run-") as tmp, FakeEndpoint() as fake:
        out = keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        seed_inputs(out, committed)
        env = fake_environment(out, fake.base_url)
        for name in [c for c in chapters if only is None or c in only]:
            command = [sys.executable, "-m", "lib.tools.pipeline", "--notebooks", str(notebooks),
                       "--params", str(params_file), *(["--profile", profile] if profile else []), "chapter", name]
            received = fake.requests
            print(f"dry run: {name} …", flush=True)
            wall_s, peak_mib, stopped = run_chapter(name, command, env, out / f"{name}.log", limit_s)
            if stopped:
                rows[name] = {"stopped_after_s": round(wall_s, 1), "http_requests": fake.requests - received,
                              "peak_rss_mib": round(peak_mib)}
                raise ChapterStopped(f"chapter {name} stopped at the limit of {wall_s / 60:.0f} min after "
                                     f"{rows[name]['http_requests']} requests; later chapters not run",
                                     {**record, "complete": False})
            rows[name] = {**profiles.ledger_totals(name, out / paths.LEDGERS.name),
                          "http_requests": fake.requests - received, "wall_s": round(wall_s, 1),
                          "peak_rss_mib": round(peak_mib)}
            print(f"dry run: {name} done in {wall_s:.0f} s, peak {peak_mib:.0f} MiB, {rows[name]['calls']} calls",
                  flush=True)
    return record


def table(record: dict[str, Any]) -> pd.DataFrame:
    """The record's chapters as a table with a total row (the peak memory's total is the largest chapter's)."""
    frame = pd.DataFrame.from_dict(record["chapters"], orient="index").rename_axis("chapter").reset_index()
    total = {"chapter": "total", **{column: frame[column].sum() for column in frame.columns[1:]},
             "peak_rss_mib": frame["peak_rss_mib"].max()}
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def write_record(record: dict[str, Any], folder: Path = profiles.PROFILES, chapters: Sequence[str] | None = None
                 ) -> Path:
    """Write ``record`` as ``<folder>/<profile>.json`` when it is complete, else as ``<profile>.partial.json``
    joined with the rows of the partial record there made at the same parameters (the new rows win). Complete:
    every chapter of ``chapters`` (default: the study's) has a row and none was stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{record['profile']}.partial.json"
    earlier = json.loads(partial.read_text()) if partial.exists() else {}
    if not record["complete"] and earlier.get("parameters_sha256") == record["parameters_sha256"]:
        record = {**record, "chapters": {**earlier["chapters"], **record["chapters"]}}
    rows = record["chapters"]
    complete = (set(rows) >= set(chapters or pipeline.notebook_names())
                and not any("stopped_after_s" in row for row in rows.values()))
    record = {**{k: v for k, v in record.items() if k != "complete"}, "complete": complete}
    if complete:
        partial.unlink(missing_ok=True)
    path = folder / f"{record['profile']}.json" if complete else partial
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.dry_run", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default=None, help="sizes overlay params.PROFILE.yaml (default: params.yaml)")
    parser.add_argument("--notebooks", type=Path, default=paths.NOTEBOOKS, help="folder of the NN_*.ipynb")
    parser.add_argument("--params", type=Path, default=pipeline.PARAMS_FILE, help="papermill parameters per notebook")
    parser.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it (logs, outputs)")
    parser.add_argument("--chapter-limit-min", type=float, default=None,
                        help="stop the run when a chapter takes longer (partial record)")
    parser.add_argument("--chapters", nargs="+", default=None,
                        help="measure only these chapters, joining an earlier partial record")
    args = parser.parse_args(argv)
    chapters = pipeline.notebook_names(args.notebooks)
    limit_s = args.chapter_limit_min * 60 if args.chapter_limit_min else None
    try:
        record = dry_run(args.profile, args.notebooks, args.params, keep=args.keep, limit_s=limit_s,
                         only=args.chapters)
    except ChapterFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        raise SystemExit(1) from None
    except ChapterStopped as stop:
        print(table(stop.record).to_string(index=False))
        print(f"error: {stop}; what was measured: {shown(write_record(stop.record, chapters=chapters))}",
              file=sys.stderr)
        raise SystemExit(2) from None
    print(table(record).to_string(index=False))
    print(f"dry run of {record['profile']}: {shown(write_record(record, chapters=chapters))}")


if __name__ == "__main__":
    main()
