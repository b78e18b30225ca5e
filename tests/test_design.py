"""Design inputs: the emotion -> category rule covers the data, persona weights are distributions."""
from __future__ import annotations

import pytest

from lib import design
from lib.data import ED_EMOTIONS


def test_every_emotion_has_a_documented_category():
    assert set(design.EMOTION_CATEGORY) == set(ED_EMOTIONS.values())
    assert set(design.EMOTION_CATEGORY.values()) == set(design.NUDGE_CATEGORIES)


def test_personas_weights_are_distributions_over_schwartz_values():
    for persona in design.PERSONAS:
        assert set(persona.values) <= set(design.SCHWARTZ_VALUES)
        assert sum(persona.values.values()) == pytest.approx(1.0)
    assert design.PERSONAS_BY_ID["striver"].top_values(2) == ["achievement", "power"]


def test_design_needs_no_llm_layer():
    import subprocess
    import sys

    code = "import sys, lib.design, lib.rankers; print(any(m.startswith('lib.llm') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
