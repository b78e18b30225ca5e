"""Plotly figures in one style, shown so that the executed notebooks and their HTML work offline.

:func:`show` puts two representations in the output: the plotly mimetype (JupyterLab renders it natively)
and HTML without plotly.js — the book (:mod:`lib.tools.book`) loads one copy for every page, where embedding
it made each notebook and page 5 MB — and without plotly's MathJax CDN tag, so nothing is fetched. The
figure's div id comes from its content instead of plotly's random uuid, so a rerun writes the same bytes.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from IPython.display import display

from lib.analysis.text import correlation_text

pio.templates.default = "simple_white"
_div_ids: set[str] = set()


def _div_id(fig_json: str) -> str:
    """``plotly-<hash of the figure JSON>``: stable across reruns, unlike plotly's default uuid. A figure
    shown again in the same kernel gets a numbered suffix, because two divs with one id would make the
    second figure draw into the first."""
    base = "plotly-" + hashlib.sha256(fig_json.encode()).hexdigest()[:16]
    div_id, repeat = base, 1
    while div_id in _div_ids:
        repeat += 1
        div_id = f"{base}-{repeat}"
    _div_ids.add(div_id)
    return div_id


def show(fig: go.Figure) -> None:
    """Display ``fig`` with the plotly mimetype and HTML that draws it with the page's plotly.js."""
    fig_json = fig.to_json()
    html = fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False, div_id=_div_id(fig_json))
    display({"application/vnd.plotly.v1+json": json.loads(fig_json), "text/html": html}, raw=True)


def histogram(values: np.ndarray, title: str, x_label: str, nbins: int = 40,
              thresholds: Sequence[float] = (), threshold_name: str = "threshold") -> go.Figure:
    """Histogram of ``values``; dashed vertical lines mark decision thresholds (e.g. rounding cuts)."""
    fig = px.histogram(x=values, nbins=nbins, title=title, labels={"x": x_label})
    fig.update_layout(yaxis_title="count", bargap=0.05, height=360)
    for threshold in thresholds:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"{threshold_name} {threshold:g}")
    return fig


def importance_probabilities(labelled: pd.DataFrame, threshold: float) -> go.Figure:
    """The judge's p(vital) of each NIST nugget, one histogram per NIST label (overlaid), with the cut fit on them."""
    frame = labelled.dropna(subset=["p_vital"]).assign(NIST=lambda f: f.nist.map({1: "vital", 0: "okay"}))
    fig = px.histogram(frame, x="p_vital", color="NIST", nbins=25, barmode="overlay", opacity=0.6,
                       category_orders={"NIST": ["vital", "okay"]}, labels={"p_vital": "judge's p(vital)"},
                       title="The judge's p(vital) of the NIST nuggets, by NIST's label")
    fig.update_layout(yaxis_title="nuggets", bargap=0.05, height=360)
    fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"cut {threshold:.3f}")
    return fig


def monitor_trend(summary, metrics: Sequence[str], targets: dict[str, float], alert: float,
                  degraded_day: str | None = None) -> go.Figure:
    """Daily mean of each monitored metric (lines) with its target (dotted, same colour), the overall mean
    (black) and the alert threshold on it (dashed red); the injected degraded day is shaded."""
    fig = go.Figure()
    colours = px.colors.qualitative.Safe
    for colour, metric in zip(colours, metrics, strict=False):
        fig.add_scatter(x=summary.day, y=summary[metric], mode="lines+markers", name=metric, line_color=colour)
        fig.add_hline(y=targets[metric], line_dash="dot", line_color=colour, opacity=0.6)
    fig.add_scatter(x=summary.day, y=summary.overall, mode="lines+markers", name="overall", line_color="black",
                    line_width=3)
    fig.add_hline(y=alert, line_dash="dash", line_color="red", annotation_text=f"alert: overall < {alert:g}")
    if degraded_day is not None:
        fig.add_vrect(x0=degraded_day, x1=degraded_day, line_width=8, line_color="red", opacity=0.15,
                      annotation_text="degraded release")
    fig.update_layout(title="Nightly judge scores (dotted: each metric's target)", yaxis_title="mean score (0–1)",
                      yaxis_range=[0, 1.05], height=420, xaxis_type="category")
    return fig


def recall_curve(similarity: dict[str, np.ndarray], threshold: float) -> go.Figure:
    """Share of reference nuggets whose best cosine to an automatic nugget is ≥ t, as t varies, one line per
    group; the declared threshold is marked."""
    grid = np.round(np.linspace(0.3, 0.9, 61), 3)
    fig = go.Figure()
    for name, values in similarity.items():
        fig.add_scatter(x=grid, y=[float(np.mean(values >= t)) for t in grid], mode="lines", name=name)
    fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"declared threshold {threshold:g}")
    fig.update_layout(title="Recall of human nuggets by embedding match", xaxis_title="cosine threshold t",
                      yaxis_title="recall", yaxis_range=[0, 1.02], height=380)
    return fig


def _colours(systems: Sequence[str]) -> dict[str, str]:
    """One colour per system, by its position in ``systems``: the same system has the same colour in every
    figure of a chapter, even in a figure where another system has no data."""
    palette = px.colors.qualitative.Safe
    return {name: palette[i % len(palette)] for i, name in enumerate(systems)}


def _plain_facet_titles(fig: go.Figure) -> None:
    """Facet titles "system=echo" → "echo"."""
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))


def crs_timeline(timeline: pd.DataFrame, systems: Sequence[str]) -> go.Figure:
    """Per-turn metric lines of one session (``timeline``: system, turn, shift, metric, value), one panel per
    system; dashed vertical lines at the user turns where the preference shifts."""
    panels = [s for s in systems if s in set(timeline["system"])]
    fig = px.line(timeline, x="turn", y="value", color="metric", facet_row="system", markers=True,
                  category_orders={"system": panels}, labels={"turn": "user turn", "value": ""})
    for turn in sorted(set(timeline.loc[timeline["shift"], "turn"])):
        fig.add_vline(x=turn, line_dash="dash", line_color="grey", row="all", col="all")
    _plain_facet_titles(fig)
    fig.update_yaxes(range=[-0.05, 1.05])
    fig.update_layout(title=f"Per-turn CC, CR and I, session {timeline['session_id'].iloc[0]} (dashed: shifts)",
                      height=150 * len(panels) + 120)
    return fig


def component_violin(components: pd.DataFrame, systems: Sequence[str]) -> go.Figure:
    """Session-level values of each component (``components``: system, component, value) per system, as violins
    with every session shown as a point."""
    fig = px.violin(components, x="component", y="value", color="system", box=True, points="all",
                    category_orders={"system": list(systems)}, color_discrete_map=_colours(systems))
    fig.update_layout(title="Session means of CC, CR, I and TAS per system", violinmode="group",
                      yaxis_title="session mean", height=420)
    return fig


def component_radar(means: pd.DataFrame, systems: Sequence[str]) -> go.Figure:
    """One closed polygon per system (``means``: systems × components, every axis higher-is-better)."""
    fig = go.Figure()
    colours = _colours(systems)
    axes = list(means.columns)
    for system, row in means.iterrows():
        fig.add_scatterpolar(r=[*row.to_numpy(dtype=float), float(row.iloc[0])], theta=[*axes, axes[0]],
                             name=str(system), line_color=colours[str(system)])
    low = min(0.0, float(np.nanmin(means.to_numpy(dtype=float))))
    fig.update_layout(title="Component means per system (every axis: higher is better)",
                      polar={"radialaxis": {"range": [low, 1]}}, height=460)
    return fig


def correlation_scatter(points: pd.DataFrame, x: str, y: str, correlation: Mapping[str, Any], systems: Sequence[str],
                        x_label: str, y_label: str) -> go.Figure:
    """Paired values per session coloured by system, with Spearman's ρ and its CI
    (:func:`lib.analysis.stats.correlation_ci`) in the title."""
    fig = px.scatter(points, x=x, y=y, color="system", labels={x: x_label, y: y_label},
                     category_orders={"system": list(systems)}, color_discrete_map=_colours(systems))
    fig.update_traces(marker={"size": 10, "opacity": 0.7})
    fig.update_layout(title=f"{y_label} vs {x_label}: Spearman {correlation_text(correlation)}", height=420)
    return fig


def recovery_delay_histogram(delays: pd.DataFrame, systems: Sequence[str], window: int) -> go.Figure:
    """Counts of recovery delays (``delays``: system, delay) per system; the dashed line separates the delays
    that count as recovered within ``window`` turns."""
    fig = px.histogram(delays, x="delay", color="system", barmode="group", category_orders={"system": list(systems)},
                       color_discrete_map=_colours(systems), labels={"delay": "recovery delay (turns)"})
    fig.add_vline(x=window - 0.5, line_dash="dash", annotation_text=f"recovered within W = {window}")
    fig.update_xaxes(dtick=1)
    fig.update_layout(title="Turns from a shift to the first reply with TAS ≥ θ (recovered shifts only)",
                      yaxis_title="shifts", bargap=0.1, height=380)
    return fig


def recovery_by_window(rates: pd.DataFrame, systems: Sequence[str], window: int) -> go.Figure:
    """Recovery rate per system as the window W grows (``rates``: system, window, recovery_rate); the declared W
    is marked."""
    fig = px.line(rates, x="window", y="recovery_rate", color="system", markers=True,
                  category_orders={"system": list(systems)}, color_discrete_map=_colours(systems),
                  labels={"window": "window W (turns)", "recovery_rate": "recovery rate"})
    fig.add_vline(x=window, line_dash="dash", annotation_text=f"declared W = {window}")
    fig.update_xaxes(dtick=1)
    fig.update_layout(title="Share of shifts recovered within W turns", yaxis_range=[-0.02, 1.02], height=380)
    return fig


def ablation_bars(scores: pd.DataFrame, systems: Sequence[str]) -> go.Figure:
    """Mean score per variant (``scores``: system, variant, score), one bar per system."""
    fig = px.bar(scores, x="variant", y="score", color="system", barmode="group",
                 category_orders={"system": list(systems)}, color_discrete_map=_colours(systems))
    fig.update_layout(title="System means under each ablation of TAS and CAS", yaxis_title="mean over sessions",
                      height=400)
    return fig


def interval_forest(rows: pd.DataFrame, title: str, x_label: str, targets: Mapping[str, float] | None = None
                    ) -> go.Figure:
    """One line per row of ``rows`` (columns label, group, value, ci_low, ci_high; optional anchor): the value
    as a dot with its 95% CI as a horizontal bar, coloured by group, in the rows' order from the top; a
    published anchor as an open diamond; a solid line at 0 and a dotted line at each of ``targets``
    (name → value). Rows whose CI is undefined show the dot alone."""
    fig = go.Figure()
    palette = px.colors.qualitative.Safe
    order = list(rows["label"])
    for colour, (group, part) in zip(palette, rows.groupby("group", sort=False), strict=False):
        fig.add_scatter(x=part["value"], y=part["label"], mode="markers", name=str(group), marker_color=colour,
                        marker_size=9, error_x={"type": "data", "symmetric": False,
                                                "array": (part["ci_high"] - part["value"]).tolist(),
                                                "arrayminus": (part["value"] - part["ci_low"]).tolist()})
    if "anchor" in rows and rows["anchor"].notna().any():
        anchored = rows[rows["anchor"].notna()]
        fig.add_scatter(x=anchored["anchor"], y=anchored["label"], mode="markers", name="published anchor",
                        marker={"symbol": "diamond-open", "size": 11, "color": "black"})
    fig.add_vline(x=0, line_color="grey")
    for name, value in (targets or {}).items():
        fig.add_vline(x=value, line_dash="dot", line_color="red", annotation_text=name)
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1])
    fig.update_layout(title=title, xaxis_title=x_label, height=140 + 26 * len(rows), legend_title_text="")
    return fig


def confusion_heatmap(table: pd.DataFrame, title: str) -> go.Figure:
    """A human × judge count table (:func:`lib.analysis.validity.confusion`) as a heatmap with the counts
    written in the cells; rows are human grades, columns judge grades, grade 0 at the top left."""
    fig = px.imshow(table.to_numpy(), x=[str(c) for c in table.columns], y=[str(i) for i in table.index],
                    text_auto=True, color_continuous_scale="Blues",
                    labels={"x": table.columns.name or "judge", "y": table.index.name or "human", "color": "items"})
    fig.update_layout(title=title, height=360, width=440)
    return fig


def cc_around_shift(frame: pd.DataFrame, systems: Sequence[str]) -> go.Figure:
    """Mean CC over sessions before, at and after the shifts per system (``frame``: one row per session with
    system, cc_before, cc_at_shift, cc_after — :func:`lib.crs.validity.shift_cc`): an adapting system dips at the
    shift and comes back; a stale one stays down."""
    phases = {"cc_before": "before", "cc_at_shift": "at the shift", "cc_after": "after"}
    means = (frame.groupby("system", sort=False)[list(phases)].mean().reset_index()
             .melt(id_vars="system", var_name="phase", value_name="cc"))
    means["phase"] = means["phase"].map(phases)
    fig = px.line(means, x="phase", y="cc", color="system", markers=True, category_orders={
        "system": list(systems), "phase": list(phases.values())}, color_discrete_map=_colours(systems))
    fig.update_layout(title="Concept consistency around the preference shifts (mean over sessions)",
                      yaxis_title="CC", yaxis_range=[-0.02, 1.02], height=380)
    return fig


def method_comparison(table: pd.DataFrame, chosen: str) -> go.Figure:
    """Dev quadratic-weighted κ of each method (``table``: :func:`lib.analysis.calibration.compare_on_dev`) with
    its CI; the chosen method, the other LLM methods and the non-LLM baselines in three colours."""
    rows = pd.DataFrame({
        "label": [f"{m} ({int(c)} call{'s' if c != 1 else ''}/item)"
                  for m, c in zip(table.index, table["calls"], strict=True)],
        "group": ["chosen" if m == chosen else "non-LLM baseline" if c == 0 else "LLM method"
                  for m, c in zip(table.index, table["calls"], strict=True)],
        "value": table["weighted_kappa"].astype(float).to_numpy(),
        "ci_low": table["weighted_kappa_ci_low"].astype(float).to_numpy(),
        "ci_high": table["weighted_kappa_ci_high"].astype(float).to_numpy()})
    return interval_forest(rows, "Methods on the dev queries (thresholds scored leave-one-query-out)",
                           "quadratic-weighted κ with the NIST grades (95% CI)")
