"""The pipeline on throwaway notebooks in a temporary folder: byte-identical reruns, the failure path, outputs
outside the repository, and the front page. Also: the committed report carries no machine path."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import plotly.graph_objects as go
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lib import paths, plots, tables, verdicts  # noqa: F401  (plots sets the figure template the notebooks use)
from lib.tools import front_page, pipeline

FIGURE_CODE = """\
import plotly.graph_objects as go
from tqdm import tqdm
from lib import plots

fig = go.Figure(go.Scatter(x=list(range(n_points)), y=[v * v for v in range(n_points)]))
plots.show(fig)
plots.show(fig)
for _ in tqdm(range(n_points), desc="steps", unit="step"):
    print("step")
print("points:", n_points)
"""


def write_notebook(folder: Path, name: str, title: str, code: str) -> Path:
    """A chapter-shaped notebook: a heading, a ``parameters`` cell (n_points = 2) and one code cell."""
    notebook = new_notebook(cells=[
        new_markdown_cell(f"# {title}\n\nA throwaway notebook for the pipeline tests."),
        new_code_cell("n_points = 2", metadata={"tags": ["parameters"]}),
        new_code_cell(code),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def study(tmp_path: Path) -> pipeline.Folders:
    """A temporary notebook 01_tiny, a params file (n_points = 3 for 01_tiny, 5 for 01_boom) and output
    folders."""
    write_notebook(tmp_path / "notebooks", "01_tiny", "Tiny chapter", FIGURE_CODE)
    params = tmp_path / "params.yaml"
    params.write_text("01_tiny:\n  n_points: 3\n01_boom:\n  n_points: 5\n")
    out = tmp_path / "out"
    return pipeline.Folders(notebooks=tmp_path / "notebooks", params=params, executed=out / "notebooks",
                            html=out / "html", tables=out / "tables", ledgers=out / "ledgers")


def run_cli(args: list[str], study: pipeline.Folders, output_dir: Path) -> subprocess.CompletedProcess:
    """``python -m lib.tools.pipeline`` on the study's notebooks, outputs in ``output_dir`` via
    STUDY_OUTPUT_DIR, importing this checkout's ``lib``."""
    env = {**os.environ, "STUDY_OUTPUT_DIR": str(output_dir),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "lib.tools.pipeline", "--notebooks", str(study.notebooks),
                           "--params", str(study.params), *args],
                          env=env, cwd=paths.ROOT, capture_output=True, text=True, timeout=600)


def test_rerun_writes_identical_bytes(study: pipeline.Folders) -> None:
    pipeline.run_all(study)
    outputs = [study.executed / "01_tiny.ipynb", *sorted(path for path in study.html.rglob("*") if path.is_file())]
    first = [path.read_bytes() for path in outputs]
    pipeline.run_all(study)
    assert sorted(path for path in study.html.rglob("*") if path.is_file()) == outputs[1:]
    assert [path.read_bytes() for path in outputs] == first

    executed = nbformat.read(outputs[0], as_version=4)
    streams = {output.name: output.text for output in executed.cells[3].outputs if output.output_type == "stream"}
    assert streams["stdout"] == "step\nstep\nstep\npoints: 3\n"  # one output; params.yaml reached the notebook
    assert re.fullmatch(r"steps: 100%\|█+\| 3/3\n", streams["stderr"])  # the bar without its timing
    injected = executed.cells[2]
    assert injected.metadata.tags == ["injected-parameters"]
    assert injected.id == hashlib.sha256(b"01_tiny:2").hexdigest()[:8]
    assert all("execution" not in cell.metadata and "start_time" not in cell.metadata.get("papermill", {})
               for cell in executed.cells)
    assert not {"start_time", "end_time", "duration"} & set(executed.metadata.papermill)
    html = (study.html / "01_tiny.html").read_text()
    # the figure shown twice: ids from its content, the second numbered so each div is drawn
    figure = go.Figure(go.Scatter(x=[0, 1, 2], y=[0, 1, 4]))
    base = "plotly-" + hashlib.sha256(figure.to_json().encode()).hexdigest()[:16]
    assert re.findall(r'<div id="(plotly-[^"]+)" class="plotly-graph-div"', html) == [base, f"{base}-2"]
    assert "<title>Tiny chapter &#8212;" in html


def test_normalise_keeps_source_ids_and_makes_paths_relative() -> None:
    notebook = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("x = 2")])
    notebook.cells[0].id = "authored"
    notebook.cells[1].id = "random12"
    notebook.cells[1].metadata.update(execution={"iopub.status.busy": "2026-01-01T00:00:00Z"},
                                      papermill={"duration": 0.1, "start_time": "t", "end_time": "t",
                                                 "status": "completed", "exception": False})
    notebook.metadata["papermill"] = {"input_path": "/x", "output_path": "/y", "duration": 1.0,
                                      "start_time": "t", "end_time": "t", "parameters": {"n": 1}}
    source = paths.NOTEBOOKS / "01_x.ipynb"
    target = Path("/elsewhere/out/01_x.ipynb")
    pipeline.normalise(notebook, "01_x", {"authored"}, source, target)
    assert [cell.id for cell in notebook.cells] == ["authored", hashlib.sha256(b"01_x:1").hexdigest()[:8]]
    assert notebook.cells[1].metadata == {"papermill": {"status": "completed", "exception": False}}
    assert notebook.metadata.papermill == {"input_path": "notebooks/01_x.ipynb",
                                           "output_path": "/elsewhere/out/01_x.ipynb", "parameters": {"n": 1}}


@pytest.mark.parametrize("command", [["run", "01_boom"], ["run-all"]])
def test_failing_cell_exits_nonzero_names_the_cell_and_leaves_no_target(
        study: pipeline.Folders, tmp_path: Path, command: list[str]) -> None:
    write_notebook(study.notebooks, "01_boom", "Boom", "value = n_points\nraise ValueError(f'boom {value}')")
    write_notebook(study.notebooks, "02_after", "After", "print('after')")
    output_dir = tmp_path / "cli-out"
    stale = [output_dir / "notebooks" / "01_boom.ipynb", output_dir / "html" / "01_boom.html"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from an older run")

    result = run_cli(command, study, output_dir)

    assert result.returncode == 1
    # source cells: heading 0, parameters 1, the raising cell 2 (papermill injects a cell before it)
    assert (f"error: 01_boom failed in cell 2 of {study.notebooks / '01_boom.ipynb'} (0-based; In [3]): "
            "ValueError: boom 5") in result.stderr
    assert "01_boom.failed.ipynb" in result.stderr
    assert (output_dir / "notebooks" / "01_boom.failed.ipynb").exists()
    assert not any(path.exists() for path in stale)
    assert not (output_dir / "notebooks" / "02_after.ipynb").exists()  # run-all stops at the failure
    assert not (output_dir / "html" / "index.html").exists()


def test_outputs_outside_the_repository(study: pipeline.Folders, tmp_path: Path) -> None:
    """Issue #9 item 7: STUDY_OUTPUT_DIR outside the repository made the run fail after writing."""
    output_dir = tmp_path / "elsewhere"
    assert not output_dir.is_relative_to(paths.ROOT)
    result = run_cli(["run-all"], study, output_dir)
    assert result.returncode == 0, result.stderr
    target = output_dir / "notebooks" / "01_tiny.ipynb"
    assert f"01_tiny: {target}\nbook: {output_dir / 'html' / 'index.html'}" in result.stdout
    assert nbformat.read(target, as_version=4).metadata.papermill["output_path"] == str(target)
    assert (output_dir / "html" / "index.html").exists()


def test_shown_path_is_relative_inside_the_repository_only() -> None:
    assert pipeline.shown(paths.ROOT / "outputs" / "html" / "a.html") == "outputs/html/a.html"
    assert pipeline.shown(Path("/elsewhere/a.html")) == "/elsewhere/a.html"


def test_front_page(tmp_path: Path) -> None:
    notebooks, tables, ledgers = (tmp_path / d for d in ("notebooks", "tables", "ledgers"))
    write_notebook(notebooks, "01_nudge_candidates", "01 · First <chapter> *", "pass")
    write_notebook(notebooks, "03_judge_labeling", "03 · Labels", "pass")
    write_notebook(notebooks, "09_unregistered", "09 · Later", "pass")
    tables.mkdir()
    tone = verdicts.verdict("03", "known_answer.tone", "judge (E[g])", "tells a dismissive nudge from its source",
                            verdicts.Claim("known answer", 0.5, margin=0.1), "AUC", 0.956, 0.9, 0.99, "entries", 12,
                            "judge_discrimination", primary=True, confirmatory=True,
                            depends_on=["03.known_answer.value_mismatch"])
    mismatch = verdicts.verdict("03", "known_answer.value_mismatch", "judge (E[g])", "sees value_mismatch",
                                verdicts.Claim("known answer", 0.5, margin=0.1), "AUC", 0.54, 0.42, 0.67, "entries",
                                12, "judge_discrimination")
    verdicts.frame([tone, mismatch]).to_parquet(tables / "verdicts.parquet")
    ledgers.mkdir()
    for name, calls, latency in (("01_nudge_candidates", 2, 1.25), ("05_new", 3, 2.5)):
        (ledgers / f"{name}.json").write_text(json.dumps({
            "calls": calls, "requests": calls + 1, "prompt_tokens": 1000 * calls,
            "completion_tokens": 10 * calls, "recorded_latency_s": latency, "retries": 1}))

    chapters = pipeline.notebook_names(notebooks)
    text = front_page.render(chapters, notebooks, {"01_nudge_candidates", "03_judge_labeling"}, tables, ledgers)

    assert chapters == ["01_nudge_candidates", "03_judge_labeling", "09_unregistered"]
    assert text.startswith(f"# {front_page.TITLE}\n")
    items = dict(re.findall(r"^\d\. (.*)\n\n   (.*)$", text, flags=re.MULTILINE))
    assert items[r"[01 · First \<chapter\> \*](01_nudge_candidates.ipynb)"].startswith(
        f"*{front_page.NO_HEADLINE} (missing table: ")
    # the primary verdict, escaped, with the verdict it depends on as its caveat: formatted, not decided, here
    assert items["[03 · Labels](03_judge_labeling.ipynb)"] == (
        r"**judge (E\[g\])** — tells a dismissive nudge from its source: **sees** [confirmatory]; AUC 0.96 "
        r"(0.90 to 0.99, 12 entries; chance 0.50 ± 0.10). Caveat: **judge (E\[g\])** — sees value\_mismatch: "
        r"**undetermined**; AUC 0.54 (0.42 to 0.67, 12 entries; chance 0.50 ± 0.10).")
    assert items["09 · Later *(not rendered)*"] == f"*{front_page.NO_HEADLINE}*"
    verdict_rows = [line for line in text.splitlines() if line.startswith("| 03 |")]
    assert [row.split(" | ")[4] for row in verdict_rows] == ["**sees**", "**undetermined**"]
    assert verdict_rows[0].endswith("| primary, confirmatory |")
    assert "| 05\\_new | 3 | 4 | 3,000 | 30 | 2.5 |" in text
    assert "| **total** | 5 | 7 | 5,000 | 50 | 3.8 |" in text
    assert front_page.render(chapters, notebooks, {"01_nudge_candidates"}, tables, ledgers).count("](") == 1
    # the page leads with what was found: the seed-system matrix with its legend and the known-answer figure, then
    # the chapters' headlines, then every verdict
    assert text.index("## What the study found") < text.index("<svg") < text.index("## Chapters") < text.index(
        "## Every verdict")
    assert front_page.legend() in text and all(f"**{word}** — " in front_page.legend() for word in verdicts.VERDICTS)
    figure = text[text.index("<svg"):text.index("</svg>")]
    assert figure.count("<circle") == 2 and "03 · judge (E[g]) — known_answer.tone" in figure  # both AUC rows
    section = text[text.index("## What the study found"):text.index("## Chapters")]
    matrix_rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in section.splitlines()
                   if line.startswith("| ") and not line.startswith("| seed system")}
    assert list(matrix_rows) == [front_page.markdown_text(s.name) for s in verdicts.SEED_SYSTEMS]
    judge = matrix_rows["nudge relevance judge"]
    assert judge[0] == "| nudge relevance judge" and judge[1] == "03"
    assert "`000_nudge_ranking.md` — nudge relevance judge, rankers, relevance judge on DL19" in section
    assert judge[2] == "2: 1 sees, 1 undetermined; some confirmatory"
    assert judge[3] == r"tells a dismissive nudge from its source: **sees**; AUC 0.96 (0.90–0.99, 12 entries) |"
    assert matrix_rows["CulturalSensitivity"][2:] == ["0", f"{verdicts.NO_VERDICT_YET} |"]


def test_a_chapters_in_brief_has_its_headline_its_counts_and_its_other_confirmatory_verdicts(tmp_path: Path) -> None:
    claim = verdicts.Claim("known answer", 0.5, margin=0.1)
    primary = verdicts.verdict("03", "primary", "judge", "sees tone", claim, "AUC", 0.9, 0.8, 0.95, "entries", 12,
                               "t", primary=True, confirmatory=True, depends_on=["03.caveat"])
    caveat = verdicts.verdict("03", "caveat", "judge", "sees values", claim, "AUC", 0.55, 0.4, 0.7, "entries", 12, "t",
                              confirmatory=True)
    other = verdicts.verdict("03", "other", "rule", "sees shame", claim, "AUC", 1.0, 1.0, 1.0, "entries", 12, "t",
                             confirmatory=True, by_construction=True)
    elsewhere = verdicts.verdict("05", "x", "judge", "sees", claim, "AUC", 0.9, 0.8, 0.95, "topics", 10, "t")
    assert front_page.in_brief("03_judge_labeling", tmp_path) is None  # no verdicts table yet
    verdicts.frame([primary, caveat, other, elsewhere]).to_parquet(tmp_path / "verdicts.parquet")
    text = front_page.in_brief("03_judge_labeling", tmp_path)
    assert text is not None and text.startswith("**In brief.** " + front_page.headline("03_judge_labeling", tmp_path))
    assert "records 3 verdicts (2 sees, 1 undetermined; 3 confirmatory; 1 by construction)" in text
    # the caveat is already in the headline: only the other confirmatory verdict is listed
    assert text.endswith("\n\n* rule — sees shame: **sees**; AUC 1.00 (1.00–1.00, 12 entries)")
    assert front_page.in_brief("04_ndcg_analysis", tmp_path) is None


def test_front_page_seed_matrix_names_rows_of_no_seed_system_and_needs_no_table(tmp_path: Path) -> None:
    before = front_page.seed_matrix(tmp_path)  # no chapter has run: every seed system, none with a verdict
    assert before.count(verdicts.NO_VERDICT_YET) == len(verdicts.SEED_SYSTEMS) and "Not in the matrix" not in before
    construction = verdicts.verdict("01", "construction.tone", "tone distractor (construction)", "is dismissive",
                                    verdicts.Claim("known answer", 0.5, margin=0.1), "AUC", 1.0, 0.9, 1.0, "entries",
                                    40, "construction_scores")
    verdicts.frame([construction]).to_parquet(tmp_path / "verdicts.parquet")
    after = front_page.seed_matrix(tmp_path)
    assert after.count(verdicts.NO_VERDICT_YET) == len(verdicts.SEED_SYSTEMS)
    assert after.endswith(f"Not in the matrix: `01.construction.tone`: "
                          f"{front_page.markdown_text(verdicts.UNASSIGNED[0][1])}.")


def test_committed_report_has_no_machine_paths() -> None:
    """Absolute paths of the machine that ran the report (papermill records them) must not be committed."""
    machine_path = re.compile(r"(?<![\w.:/])/(?:work|tmp|root|home)/")
    files = sorted(paths.ROOT.glob("outputs/notebooks/*.ipynb")) + sorted(paths.ROOT.glob("outputs/html/*.html"))
    assert files
    leaks = {f.name: m.string[m.start() - 40:m.end() + 40]
             for f in files if (m := machine_path.search(f.read_text(encoding="utf-8")))}
    assert leaks == {}


def tiny_drift(params: dict) -> pd.DataFrame:
    """A measurement for the tests: one judge_drift row whose item count is the notebook's n_points."""
    return pd.DataFrame([{**dict.fromkeys(tables.SCHEMAS["judge_drift"], "x"), "items": params["n_points"]}])


def broken_measurement(params: dict) -> pd.DataFrame:
    raise RuntimeError("endpoint down")


def test_measurements_run_before_their_notebook_with_its_parameters(study: pipeline.Folders, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "TABLES", tmp_path / "tables")
    monkeypatch.setattr(pipeline, "MEASUREMENTS", {"01_tiny": (("judge_drift", "tests.test_pipeline:tiny_drift"),)})
    assert pipeline.measure("01_boom", study) == []  # a notebook without measurements
    assert pipeline.measure("01_tiny", study) == [str(tmp_path / "tables" / "judge_drift.parquet")]
    assert tables.read_table("judge_drift")["items"].tolist() == [3]  # 01_tiny's n_points from params.yaml
    # a failing measurement stops run-all before its notebook runs
    monkeypatch.setattr(pipeline, "MEASUREMENTS",
                        {"01_tiny": (("judge_drift", "tests.test_pipeline:broken_measurement"),)})
    with pytest.raises(RuntimeError, match="endpoint down"):
        pipeline.run_all(study)
    assert not (study.executed / "01_tiny.ipynb").exists()


def test_a_profile_overlays_the_parameters_it_names_and_refuses_unknown_ones(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("01_a:\n  n: 3\n  seed: 0\n02_b:\n  k: 1\n")
    assert pipeline.profile_file(params, "full") == tmp_path / "params.full.yaml"
    with pytest.raises(SystemExit, match="no profile 'full'"):
        pipeline.parameters_for("01_a", params, "full")
    (tmp_path / "params.full.yaml").write_text("01_a:\n  n: 300\n")
    assert pipeline.parameters_for("01_a", params, "full") == {"n": 300, "seed": 0}
    assert pipeline.parameters_for("01_a", params) == {"n": 3, "seed": 0}
    assert pipeline.parameters_for("02_b", params, "full") == {"k": 1}
    (tmp_path / "params.full.yaml").write_text("01_a:\n  n_entries: 300\n")
    with pytest.raises(SystemExit, match=r"params\.full\.yaml sets n_entries for 01_a, which .*params\.yaml does not"):
        pipeline.parameters_for("01_a", params, "full")
    (tmp_path / "params.full.yaml").write_text("01_a:\n  n: 300\n01_aa:\n  n: 300\n")
    with pytest.raises(SystemExit, match=r"params\.full\.yaml has sections 01_aa, which .*params\.yaml does not"):
        pipeline.parameters_for("02_b", params, "full")
