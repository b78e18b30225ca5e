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
