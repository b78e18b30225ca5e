"""Design inputs of the study (not data, no LLM): personas with value profiles, nudge categories, the rule
from emotion to category, and the relevance grade scale.

Personas: each has a self-description and weights over Schwartz's ten basic values (Schwartz 1992;
definitions after Schwartz 2012, "An Overview of the Schwartz Theory of Basic Values", Online Readings in
Psychology and Culture 2(1)). Chapter 01 matches them to entries by a documented rule (by default the persona
whose ``description`` is most similar to the entry text, :func:`lib.nudges.sample_entries`), so the
description doubles as the text the rule compares; the value-aware ranker of chapter 02 and the relevance
judge of chapter 03 read them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

SCHWARTZ_VALUES: dict[str, str] = {
    "self_direction": "independent thought and action: choosing, creating, exploring",
    "stimulation": "excitement, novelty and challenge in life",
    "hedonism": "pleasure and sensuous gratification for oneself",
    "achievement": "personal success through demonstrating competence by social standards",
    "power": "social status and prestige, control or dominance over people and resources",
    "security": "safety, harmony and stability of society, of relationships and of self",
    "conformity": "restraint of actions likely to upset or harm others and violate social norms",
    "tradition": "respect for and acceptance of the customs and ideas of one's culture or religion",
    "benevolence": "preserving and enhancing the welfare of those with whom one is in frequent contact",
    "universalism": "understanding, tolerance and protection for the welfare of all people and nature",
}


@dataclass(frozen=True)
class Persona:
    persona_id: str
    description: str
    values: dict[str, float]  # weights over SCHWARTZ_VALUES, summing to 1

    def top_values(self, k: int = 3) -> list[str]:
        return [v for v, _ in sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


PERSONAS: tuple[Persona, ...] = (
    Persona("caregiver", "a nurse in her forties who looks after her parents and two teenagers",
            {"benevolence": 0.35, "security": 0.25, "tradition": 0.15, "conformity": 0.15, "universalism": 0.10}),
    Persona("striver", "a junior software engineer who wants to be promoted within two years",
            {"achievement": 0.40, "power": 0.20, "self_direction": 0.20, "stimulation": 0.10, "security": 0.10}),
    Persona("explorer", "a freelance photographer who moves cities every few years",
            {"self_direction": 0.35, "stimulation": 0.30, "hedonism": 0.15, "universalism": 0.20}),
    Persona("steward", "a retired teacher who volunteers at a community garden",
            {"universalism": 0.35, "benevolence": 0.30, "tradition": 0.20, "security": 0.15}),
    Persona("provider", "a first-generation immigrant who runs a small shop and sends money home",
            {"security": 0.30, "tradition": 0.25, "benevolence": 0.25, "achievement": 0.20}),
)
PERSONAS_BY_ID: dict[str, Persona] = {p.persona_id: p for p in PERSONAS}

NUDGE_CATEGORIES: dict[str, str] = {
    "reflection": "invite the writer to notice and name what the moment means to them",
    "reframing": "offer a kinder or wider way to see what happened, without dismissing the feeling",
    "action": "suggest one small, concrete step the writer can take soon",
    "gratitude": "help the writer savour what went well and who or what helped",
    "support": "acknowledge the pain and remind the writer they need not carry it alone",
}

# Emotion -> category. Rule: positive emotions -> gratitude (savouring); anger, blame, shame and envy ->
# reframing (reappraisal); loss and fear -> support; future-directed or uncertain states -> action;
# memory, attachment and surprise -> reflection.
EMOTION_CATEGORY: dict[str, str] = {
    **dict.fromkeys(["excited", "proud", "grateful", "impressed", "joyful", "content"], "gratitude"),
    **dict.fromkeys(["annoyed", "angry", "disgusted", "disappointed", "guilty", "furious", "jealous",
                     "embarrassed", "ashamed"], "reframing"),
    **dict.fromkeys(["sad", "lonely", "afraid", "terrified", "devastated"], "support"),
    **dict.fromkeys(["confident", "hopeful", "anxious", "prepared", "anticipating", "apprehensive"], "action"),
    **dict.fromkeys(["surprised", "nostalgic", "sentimental", "caring", "trusting", "faithful"], "reflection"),
}

# The relevance grade scale (UMBRELA's 0–2 wording, the same scale as the NovelEval human grades):
# 0 irrelevant, 1 okay, 2 highly relevant. The relevance judge's answer schema, the agreement statistics and
# the ranking measures' linear gains all use it.
GradeValue = Literal[0, 1, 2]
GRADES: tuple[int, ...] = get_args(GradeValue)
