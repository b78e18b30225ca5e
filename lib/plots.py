"""Plotly figures in one style, shown so that the executed notebooks and their HTML work offline.

:func:`show` puts two representations in the output: the plotly mimetype (JupyterLab renders it natively)
and self-contained HTML whose first figure per kernel embeds plotly.js inline — no CDN, no MathJax script
(plotly's own notebook renderer always adds a MathJax CDN tag). The figure's div id comes from its content
instead of plotly's random uuid, so a rerun writes the same bytes.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from IPython.display import display

pio.templates.default = "simple_white"
_plotlyjs_embedded = False
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
    """Display ``fig`` with the plotly mimetype and offline HTML (plotly.js inline on the first figure)."""
    global _plotlyjs_embedded
    fig_json = fig.to_json()
    html = fig.to_html(full_html=False, include_plotlyjs=not _plotlyjs_embedded, include_mathjax=False,
                       div_id=_div_id(fig_json))
    _plotlyjs_embedded = True
    display({"application/vnd.plotly.v1+json": json.loads(fig_json), "text/html": html}, raw=True)


def histogram(values: np.ndarray, title: str, x_label: str, nbins: int = 40,
              thresholds: Sequence[float] = (), threshold_name: str = "threshold") -> go.Figure:
    """Histogram of ``values``; dashed vertical lines mark decision thresholds (e.g. rounding cuts)."""
    fig = px.histogram(x=values, nbins=nbins, title=title, labels={"x": x_label})
    fig.update_layout(yaxis_title="count", bargap=0.05, height=360)
    for threshold in thresholds:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"{threshold_name} {threshold:g}")
    return fig


def monitor_trend(summary, metrics: Sequence[str], targets: dict[str, float], alert: float,
                  degraded_day: str | None = None) -> go.Figure:
    """Daily mean of each monitored metric (lines) with its target (dotted, same colour), the overall mean
    (black) and the alert threshold on it (dashed red); the injected degraded day is shaded."""
    fig = go.Figure()
    colours = px.colors.qualitative.Safe
    for colour, metric in zip(colours, metrics):
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
