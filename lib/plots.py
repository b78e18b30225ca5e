"""Plotly figures in one style, shown so that the executed notebooks and their HTML work offline.

:func:`show` puts two representations in the output: the plotly mimetype (JupyterLab renders it natively)
and self-contained HTML whose first figure per kernel embeds plotly.js inline — no CDN, no MathJax script
(plotly's own notebook renderer always adds a MathJax CDN tag).
"""
from __future__ import annotations

import json

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio
from IPython.display import display

pio.templates.default = "simple_white"
_plotlyjs_embedded = False


def show(fig: go.Figure) -> None:
    """Display ``fig`` with the plotly mimetype and offline HTML (plotly.js inline on the first figure)."""
    global _plotlyjs_embedded
    html = fig.to_html(full_html=False, include_plotlyjs=not _plotlyjs_embedded, include_mathjax=False)
    _plotlyjs_embedded = True
    display({"application/vnd.plotly.v1+json": json.loads(fig.to_json()), "text/html": html}, raw=True)


def histogram(values: np.ndarray, title: str, x_label: str, nbins: int = 40,
              threshold: float | None = None) -> go.Figure:
    """Histogram of ``values``; an optional vertical line marks a decision threshold."""
    fig = px.histogram(x=values, nbins=nbins, title=title, labels={"x": x_label})
    fig.update_layout(yaxis_title="count", bargap=0.05, height=360)
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"threshold {threshold:g}")
    return fig
