"""Chapter 07's figures, asserted on their data: the interval forest (card, bias battery, dev methods), the
confusion heatmap and CC around the shifts; and the chapter's parameters against params.yaml."""
from __future__ import annotations

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml

from lib import paths, plots


def forest_rows():
    return pd.DataFrame({"label": ["judge A", "judge B", "baseline"], "group": ["LLM", "LLM", "baseline"],
                         "value": [0.3, 0.5, 0.1], "ci_low": [0.1, 0.2, np.nan], "ci_high": [0.6, 0.7, np.nan],
                         "anchor": [0.58, np.nan, np.nan]})


def test_interval_forest_draws_each_group_with_its_intervals_the_anchors_and_targets():
    fig = plots.interval_forest(forest_rows(), "card", "κ_w", {"target 0.40": 0.4})
    llm, baseline, anchors = fig.data
    assert llm.name == "LLM" and list(llm.y) == ["judge A", "judge B"] and list(llm.x) == [0.3, 0.5]
    assert (list(llm.error_x.array) == pytest.approx([0.3, 0.2])
            and list(llm.error_x.arrayminus) == pytest.approx([0.2, 0.3]))
    assert baseline.name == "baseline" and np.isnan(baseline.error_x.array[0])  # undefined CI: the dot alone
    assert anchors.name == "published anchor" and list(anchors.x) == [0.58] and list(anchors.y) == ["judge A"]
    assert list(fig.layout.yaxis.categoryarray) == ["baseline", "judge B", "judge A"]  # first row on top
    assert [shape.x0 for shape in fig.layout.shapes] == [0, 0.4]
    no_anchor = plots.interval_forest(forest_rows().drop(columns="anchor"), "bias", "value")
    assert [trace.name for trace in no_anchor.data] == ["LLM", "baseline"]


def test_method_comparison_marks_the_chosen_method_and_the_baselines():
    table = pd.DataFrame({"calls": [1, 2, 0], "weighted_kappa": [0.2, 0.4, 0.3],
                          "weighted_kappa_ci_low": [0.0, 0.1, 0.1], "weighted_kappa_ci_high": [0.4, 0.6, 0.5]},
                         index=pd.Index(["plain", "criteria", "BM25"], name="method"))
    fig = plots.method_comparison(table, "plain")
    by_name = {trace.name: trace for trace in fig.data}
    assert list(by_name) == ["chosen", "LLM method", "non-LLM baseline"]
    assert list(by_name["chosen"].y) == ["plain (1 call/item)"] and list(by_name["LLM method"].y) == [
        "criteria (2 calls/item)"]
    assert list(by_name["non-LLM baseline"].x) == [0.3]


def test_confusion_heatmap_keeps_the_counts_and_the_grade_order():
    table = pd.DataFrame([[3, 1], [0, 2]], index=pd.Index([0, 1], name="human"), columns=pd.Index([0, 1], name="judge"))
    fig = plots.confusion_heatmap(table, "confusion")
    heat = fig.data[0]
    assert np.asarray(heat.z).tolist() == [[3, 1], [0, 2]] and list(heat.x) == ["0", "1"] and list(heat.y) == ["0", "1"]
    assert fig.layout.xaxis.title.text == "judge" and fig.layout.yaxis.title.text == "human"


def test_cc_around_shift_averages_each_phase_per_system():
    frame = pd.DataFrame({"system": ["template", "template", "stale"], "cc_before": [1.0, 0.8, 0.9],
                          "cc_at_shift": [0.2, 0.4, 0.1], "cc_after": [0.9, 0.9, 0.1]})
    fig = plots.cc_around_shift(frame, ["template", "stale"])
    lines = {trace.name: trace for trace in fig.data}
    assert list(lines["template"].x) == ["before", "at the shift", "after"]
    assert list(lines["template"].y) == pytest.approx([0.9, 0.3, 0.9]) and list(lines["stale"].y) == pytest.approx(
        [0.9, 0.1, 0.1])


def test_chapter07_parameters_match_params_yaml():
    """The notebook's parameters cell has exactly the keys of its params.yaml section (the SummEval documents those
    values draw are checked in tests/test_ch07.py)."""
    params = yaml.safe_load((paths.ROOT / "params.yaml").read_text())
    notebook = nbformat.read(paths.NOTEBOOKS / "07_validity.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    names = {line.split("=")[0].strip() for line in cell.source.splitlines()
             if "=" in line and not line.startswith("#")}
    assert names == set(params["07_validity"])
