"""Plotly figures in one style. Figures embed plotly.js in the notebook output (no CDN), so the executed
notebooks and their HTML rendering show them offline; JupyterLab renders the plotly mimetype natively."""
from __future__ import annotations

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio

pio.renderers.default = "plotly_mimetype+notebook"
pio.templates.default = "simple_white"


def histogram(values: np.ndarray, title: str, x_label: str, nbins: int = 40,
              threshold: float | None = None) -> go.Figure:
    """Histogram of ``values``; an optional vertical line marks a decision threshold."""
    fig = px.histogram(x=values, nbins=nbins, title=title, labels={"x": x_label})
    fig.update_layout(yaxis_title="count", bargap=0.05, height=360)
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"threshold {threshold:g}")
    return fig
