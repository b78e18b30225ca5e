"""CRS metrics on hand-made turns: CC, CR, I, TAS and its clip, recovery and interference around a scripted
shift, CAS, missing / hallucinated concepts, legacy segmentation and its agreement with the shifts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lib.crs.config import MetricConfig
from lib.crs.metrics import (
    boundary_agreement,
    copy_ratio,
    idf_cosine,
    jaccard,
    legacy_boundaries,
    legacy_similarities,
    pk,
    session_summary,
    shift_table,
    turn_adaptation,
    turn_table,
)
from tests.crs_tiny import tiny_universe


@pytest.fixture(scope="module")
def universe():
    return tiny_universe()


def user(turn, text, stated, preference, dropped=(), shift=False):
    return {"speaker": "USER", "text": text,
            "user_meta": {"turn": turn, "kind": "shift" if shift else ("open" if turn == 0 else "refine"),
                          "focus": stated[0].split("=")[0], "stated": list(stated), "preference": list(preference),
                          "dropped": list(dropped), "shift": shift, "phrasing": "template", "target": "7",
                          "liked": None, "quiet": False}}


def system(text, constraints=()):
    return {"speaker": "SYSTEM", "text": text, "constraints": list(constraints)}


def test_jaccard():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), {"a"}) == 0.0 and math.isnan(jaccard(set(), set()))


def test_idf_weighted_cosine():
    idf = {"x": 2.0, "y": 1.0}.__getitem__
    # (2·2) / (√(4 + 1) · √4)
    assert idf_cosine({"x", "y"}, {"x"}, idf) == pytest.approx(4 / (math.sqrt(5) * 2))
    assert idf_cosine(set(), {"x"}, idf) == 0.0 and math.isnan(idf_cosine({"x"}, set(), idf))


HASH_SEED_PROBE = """
import math
from lib.crs.metrics import idf_cosine
idf = {f"c{i}": math.log(1 + 7919 / (1 + i * i * 37 % 101)) + 1 for i in range(40)}.__getitem__
print(repr(idf_cosine(frozenset(f"c{i}" for i in range(40)), frozenset(f"c{i}" for i in range(0, 40, 3)), idf)))
"""


def test_idf_weighted_cosine_does_not_depend_on_the_hash_seed():
    # Set iteration follows PYTHONHASHSEED; summed in that order these sets gave values one ulp apart.
    import os
    import subprocess
    import sys

    from lib import paths

    values = {subprocess.run([sys.executable, "-c", HASH_SEED_PROBE], capture_output=True, text=True, check=True,
                             env=dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=str(paths.ROOT))).stdout
              for seed in range(1, 7)}
    assert len(values) == 1


def test_copy_ratio_is_the_max_over_orders_of_clipped_ngram_precision():
    # bigrams ab bc cd vs ab bc cx: 2/3; trigrams abc bcd vs abc bcx: 1/2; the max is 2/3.
    assert copy_ratio(["a", "b", "c", "d"], ["a", "b", "c", "x"], (2, 3)) == pytest.approx(2 / 3)
    # Clipped counts: "a b" occurs twice in the system turn but once in the user turn: 1 of 3 bigrams.
    assert copy_ratio(["a", "b", "a", "b"], ["a", "b"], (2,)) == pytest.approx(1 / 3)
    assert copy_ratio(["hi"], ["hi"], (2, 3)) == 0.0  # shorter than every order


def test_tas_weights_and_clip():
    weights = {"alpha": 0.5, "beta": 0.5, "gamma": 1.0}
    assert turn_adaptation(1.0, 0.5, 0.25, weights) == pytest.approx(0.5 + 0.25 - 0.25)
    assert turn_adaptation(1.0, 1.0, 0.0, {"alpha": 1.0, "beta": 1.0, "gamma": 0.1}) == 1.0
    assert turn_adaptation(0.0, 0.0, 1.0, {"alpha": 0.5, "beta": 0.5, "gamma": 2.0}) == -1.0


def test_turn_metrics_on_hand_made_turns(universe):
    conversation = [
        user(0, "I want a comedy with Tom Hanks", ["genre=comedy", "actor=tom hanks"],
             ["genre=comedy", "actor=tom hanks"]),
        system("Matching genre comedy, actor Tom Hanks: Big (1988) or Splash (1984)."),
        user(1, "Could it also be a movie from 1993?", ["year=1993"], ["genre=comedy", "actor=tom hanks", "year=1993"]),
        system("Try Heat (1995), a great vampire comedy."),
    ]
    turns = turn_table(conversation, universe, MetricConfig())
    first, second = turns.iloc[0], turns.iloc[1]
    # Turn 0: S = {comedy, Tom Hanks} = P = U; the system's n-grams ("matching genre <genre>", …) are not the user's.
    assert (first["cc"], first["cr"], first["copy_ratio"], first["tas"]) == (1.0, pytest.approx(1.0), 0.0,
                                                                             pytest.approx(1.0))
    # Turn 1: S = {vampire, comedy} (Heat carries none of P), P = {comedy, Tom Hanks, 1993}: CC = 1/4.
    assert second["cc"] == pytest.approx(1 / 4)
    assert second["cr"] == 0.0  # U = {1993} is not in S
    assert second["missing"] == ("actor=tom hanks", "year=1993")
    assert second["hallucinated"] == ("plot=vampire",)  # comedy was stated; Heat is no vampire movie
    assert second["titles"] == ("Heat (1995)",)
    assert second["tas"] == pytest.approx(0.5 * 0.25 + 0.5 * 0.0 - 0.0)


def test_cr_weights_rare_concepts_more(universe):
    conversation = [user(0, "a comedy with Tom Hanks", ["genre=comedy", "actor=tom hanks"],
                         ["genre=comedy", "actor=tom hanks"]),
                    system("Matching actor Tom Hanks: Cast Away (2000).")]
    row = turn_table(conversation, universe, MetricConfig()).iloc[0]
    # Cast Away is no comedy: S = {Tom Hanks}. CR = idf(h)² / (idf(h) · √(idf(c)² + idf(h)²)).
    c, h = universe.idf("genre=comedy"), universe.idf("actor=tom hanks")
    assert row["cr"] == pytest.approx(h / math.sqrt(c ** 2 + h ** 2))
    assert row["cc"] == pytest.approx(1 / 2)


def scripted_shift():
    """Comedy with Tom Hanks, then a shift to horror at turn 2; the system repeats the old wish once and
    recovers at turn 3."""
    old = ["actor=tom hanks", "genre=comedy"]
    return [
        user(0, "I want a comedy.", ["genre=comedy"], ["genre=comedy"]),
        system("Matching genre comedy: Big (1988)."),
        user(1, "Could it also be a movie with Tom Hanks?", ["actor=tom hanks"], old),
        system("Matching genre comedy, actor Tom Hanks: Splash (1984)."),
        user(2, "Actually, forget that: I want a horror movie.", ["genre=horror"], ["genre=horror"], old, shift=True),
        system("Matching genre comedy, actor Tom Hanks: Big (1988)."),
        user(3, "Could it also be a movie directed by F.W. Murnau?", ["director=f w murnau"],
             ["director=f w murnau", "genre=horror"], old),
        system("Matching genre horror, director F.W. Murnau: Nosferatu (1922)."),
    ]


EVENTS = [{"turn": 2, "from": "actor", "to": "genre", "values": ["genre=horror"], "kept": [],
           "dropped": ["actor=tom hanks", "genre=comedy"]}]


def test_recovery_delay_interference_and_cas_on_a_scripted_shift(universe):
    config = MetricConfig()
    turns = turn_table(scripted_shift(), universe, config)
    assert list(turns["segment"]) == [0, 0, 1, 1]
    assert turns.loc[2, "cc"] == 0.0 and turns.loc[2, "stale"] == ("actor=tom hanks", "genre=comedy")
    # Turn 3: S = {horror, Murnau} = P; U = {Murnau}: CR = idf(m) / √(idf(h)² + idf(m)²).
    h, m = universe.idf("genre=horror"), universe.idf("director=f w murnau")
    cr3 = m / math.sqrt(h ** 2 + m ** 2)
    assert turns.loc[3, "cc"] == 1.0 and turns.loc[3, "cr"] == pytest.approx(cr3)
    [shift] = shift_table(turns, EVENTS, config).to_dict("records")
    assert shift["delay"] == 1 and shift["recovered"]            # TAS(3) = 0.5 + 0.5·CR ≥ 0.5
    assert shift["censored"]                                     # the segment has 2 < W = 3 turns
    assert shift["interference"] == pytest.approx(1 / 2)         # turn 2 stale, turn 3 not
    assert shift["cc_before"] == 1.0 and shift["cc_after"] == pytest.approx(1 / 2)
    assert not shift_table(turns, EVENTS, MetricConfig(window=1)).loc[0, "recovered"]
    summary = session_summary(turns, shift_table(turns, EVENTS, config), config)
    tas = (1.0 + (0.5 + 0.5 * turns.loc[1, "cr"]) + 0.0 + (0.5 + 0.5 * cr3)) / 4
    assert summary["tas"] == pytest.approx(tas)
    assert (summary["recovery_rate"], summary["recovery_delay"], summary["interference"]) == (1.0, 1.0, 0.5)
    assert summary["cas"] == pytest.approx(0.5 * tas + 0.25 * 1.0 + 0.25 * 0.5)
    assert summary["missing"] == 1  # only turn 2 misses a concept (horror)
    assert (summary["scored_turns"], summary["failed_turns"]) == (4, 0)


def test_an_echo_never_recovers_and_an_empty_reply_is_not_scored(universe):
    conversation = scripted_shift()
    conversation[5] = system(conversation[4]["text"])  # echo the shift turn: CC = CR = I = 1, TAS = 0
    conversation[7] = system("")                       # a failed LLM call
    config = MetricConfig()
    turns = turn_table(conversation, universe, config)
    assert turns.loc[2, ["cc", "cr", "copy_ratio", "tas"]].tolist() == pytest.approx([1.0, 1.0, 1.0, 0.0])
    assert not turns.loc[3, "scored"] and math.isnan(turns.loc[3, "tas"])
    shift = shift_table(turns, EVENTS, config).iloc[0]
    assert shift["delay"] is None and not shift["recovered"]
    summary = session_summary(turns, shift_table(turns, EVENTS, config), config)
    assert summary["recovery_delay"] is None and (summary["scored_turns"], summary["failed_turns"]) == (3, 1)


def test_a_reply_that_keeps_an_abandoned_wish_does_not_recover(universe):
    conversation = scripted_shift()
    conversation[7] = system("Matching genre horror, director F.W. Murnau, actor Tom Hanks: Nosferatu (1922).")
    config = MetricConfig()
    turns = turn_table(conversation, universe, config)
    # S = {horror, Murnau, Tom Hanks}, P = {horror, Murnau}: CC = 2/3; U = {Murnau}.
    h, m, t = (universe.idf(c) for c in ("genre=horror", "director=f w murnau", "actor=tom hanks"))
    assert turns.loc[3, "tas"] == pytest.approx(0.5 * 2 / 3 + 0.5 * m / math.sqrt(h ** 2 + m ** 2 + t ** 2))
    assert turns.loc[3, "tas"] >= config.recovery_threshold and turns.loc[3, "stale"] == ("actor=tom hanks",)
    shift = shift_table(turns, EVENTS, config).iloc[0]
    assert shift["delay"] is None and not shift["recovered"]


def test_a_session_without_shifts_has_no_recovery_or_cas(universe):
    turns = turn_table(scripted_shift()[:4], universe, MetricConfig())
    summary = session_summary(turns, shift_table(turns, [], MetricConfig()), MetricConfig())
    assert summary["recovery_rate"] is None and summary["interference"] is None and summary["cas"] is None


def test_conversation_must_alternate(universe):
    with pytest.raises(ValueError, match="alternates USER and SYSTEM"):
        turn_table(scripted_shift()[1:], universe, MetricConfig())


def test_legacy_segmentation_with_an_injected_embedding():
    vectors = {"a": [1.0, 0.0], "b": [0.8, 0.6], "c": [0.0, 1.0]}

    def fake_embed(texts):
        return np.array([vectors[t] for t in texts])

    similarities = legacy_similarities(["a", "b", "c", "c"], "embedding", fake_embed)
    assert similarities == pytest.approx([0.8, 0.6, 1.0])
    assert legacy_boundaries(similarities.tolist(), 0.7) == (2,)


def test_legacy_jaccard_similarity_uses_content_words():
    # {comedy, movie} vs {romantic, comedy, movie}: 2/3 ("a", "the" are stop words).
    assert legacy_similarities(["a comedy movie", "the romantic comedy movie"], "jaccard") == pytest.approx([2 / 3])


def test_boundary_agreement_and_pk():
    exact = boundary_agreement([3, 6], [3, 5], n_turns=8)
    assert (exact["tp"], exact["precision"], exact["recall"], exact["f1"]) == (1, 0.5, 0.5, 0.5)
    assert boundary_agreement([3, 6], [3, 5], n_turns=8, tolerance=1)["tp"] == 2
    # Segments 000 111 22 vs 000 11 222, k = round(8 / 3 / 2) = 1: pairs (4,5) and (5,6) disagree: 2 of 7.
    assert pk([3, 6], [3, 5], 8) == pytest.approx(2 / 7)
    assert pk([3, 6], [3, 6], 8) == 0.0
    none = boundary_agreement([3], [], n_turns=8)
    assert none["tp"] == 0 and math.isnan(none["precision"]) and none["recall"] == 0.0 and math.isnan(none["f1"])


def test_config_refuses_unknown_weights():
    with pytest.raises(ValueError, match="alpha, beta, gamma"):
        MetricConfig(tas_weights={"alpha": 1.0})
    with pytest.raises(ValueError, match="unknown components"):
        MetricConfig(cas_weights={"tas": 1.0, "speed": 0.5})
