"""Chapter 03 (judge labeling): the loops that build its tables and its generated text, and its front-page
headline. The notebook calls these; each is tested on small hand-made tables (``tests/test_ch03.py``)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.analysis.stats import interval_text
from lib.chapters.headline import Tables, headline


@headline("03_judge_labeling", "judge_validity")
def chosen_label(tables: Tables) -> str:
    """The label definition chosen for chapter 04 and its agreement with human grades, beside the others."""
    validity = tables["judge_validity"]
    chosen = validity[validity["chosen"]]
    if len(chosen) != 1:
        raise ValueError(f"judge_validity: {len(chosen)} rows marked chosen, expected 1")
    row = chosen.iloc[0]
    others = ", ".join(f"{r['weighted_kappa']:.2f} ({r['label_definition']})"
                       for _, r in validity[~validity["chosen"]].iterrows())
    return (f"The label used downstream is the {row['label_definition']} grade: quadratic-weighted κ = "
            f"{row['weighted_kappa']:.2f} ({interval_text(row['weighted_kappa_ci_low'], row['weighted_kappa_ci_high'])}) "
            f"with human grades on {int(row['n'])} passages ({row['dataset']})"
            + (f", against {others}." if others else "."))
