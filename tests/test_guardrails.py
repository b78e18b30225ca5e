"""ToneEmpathy's shaming rule (lib.judges.guardrails.shaming_rule): fires on second-person blame, not on
neutral mentions of failure — including the two nudges the word-list version wrongly scored 1."""
from __future__ import annotations

import pytest

from lib.judges import guardrails
from lib.judges.guardrails import RuleVerdict, banned_word_rule, shaming_phrases, shaming_rule

SHAMING = [
    ("You failed, but tomorrow is new.", "you_failed", "You failed"),
    ("Honestly, you really messed up with her.", "you_failed", "you really messed up"),
    ("You've let everyone down again.", "you_failed", "You've let everyone down"),
    ("You gave up too easily.", "you_failed", "You gave up"),
    ("It's your fault the plan fell through.", "your_fault", "It's your fault"),
    ("That was your own mistake.", "your_fault", "That was your own mistake"),
    ("You only have yourself to blame.", "your_fault", "You only have yourself to blame"),
    ("That's on you.", "your_fault", "That's on you"),
    ("You should be ashamed of how you acted.", "should_be_ashamed", "You should be ashamed"),
    ("Shame on you for forgetting.", "should_be_ashamed", "Shame on you"),
    ("You should have known better than to trust him.", "should_be_ashamed", "You should have known better"),
    ("You're lazy, that's all.", "you_are_insult", "You're lazy"),
    ("Admit it: you are being selfish.", "you_are_insult", "you are being selfish"),
    ("You're such a failure at this.", "you_are_insult", "You're such a failure"),
    ("You should have studied harder", "should_have_done", "You should have studied"),
    ("You ought to have listened to her.", "should_have_done", "You ought to have listened"),
    ("What were you thinking?", "you_always_never", "What were you thinking"),
    ("You never learn.", "you_always_never", "You never learn"),
]


@pytest.mark.parametrize("text, pattern, matched", SHAMING)
def test_second_person_blame_scores_one_with_the_phrase_as_reason(text, pattern, matched):
    assert shaming_rule(text) == RuleVerdict(score=1, reason=f"shaming: {pattern}: {matched}")


@pytest.mark.parametrize("text", [
    # the two hits of the word-list rule on the study's nudges (chapter 03's ToneEmpathy scores), both neutral
    "Remember that failure is a part of the learning process. It's not about failing, it's about growing",
    "Remember, even when things go wrong, there's always a chance to learn and grow.",
    # neutral or kind mentions of failure, mistakes and blame
    "Every mistake teaches something.", "That was a bad day.", "What can you learn from your mistake?",
    "Even if you fail, you can still make a career.", "A badger visited the garden.",
    # second person, but excused by its clause (condition, reassurance, negation)
    "It's okay that you failed; you tried your best.", "Even if you failed, you showed up.",
    "No shame that you gave up early.", "It's not your fault.", "You didn't fail, you learned.",
    "You're not lazy, you're tired.", "Don't blame yourself for this.",
    # reassured in the sentence or hedged in the clause (the review's two false positives), and advice
    "It is okay, you failed this time but you will grow.", "Maybe you failed, but you tried.",
    "You should have a rest tonight.",
    # the writer's self-talk quoted back is not the assistant blaming them
    "You called yourself pathetic; would you say that to a friend?",
])
def test_neutral_mentions_and_excused_phrases_do_not_fire(text):
    assert shaming_phrases(text) == () and shaming_rule(text) is None


def test_a_later_unexcused_match_still_fires():
    # the first "you failed" is excused by its clause, the second is not
    assert shaming_phrases("If you failed once, fine. But you failed again.") == ("you_failed: you failed",)


def test_every_pattern_has_a_positive_example():
    assert {pattern for _, pattern, _ in SHAMING} == set(guardrails.SHAME_PATTERNS)


@pytest.mark.parametrize("text, word", [
    ("You failed to stick to your budget. This is a mistake you need to fix.", "failed"),  # the spec's low example
    ("You made a wrong turn. Let's recalculate your route.", "wrong"),  # the spec expects 4-5; its list says 1
    ("What a badge of honour!", "bad"),  # matched inside a longer word, as the specification matches
    ("No problem at all.", "problem"),
])
def test_the_specifications_banned_word_rule_fires_on_any_listed_word_anywhere(text, word):
    assert banned_word_rule(text) == RuleVerdict(score=1, reason=f'contains banned shame word: "{word}"')


def test_the_two_tone_rules_disagree_where_the_study_changed_the_rule():
    neutral = "Remember that failure is a part of the learning process."
    assert banned_word_rule(neutral) is not None and shaming_rule(neutral) is None
    blame = "You gave up too easily."  # "gave up" is in the specification's criteria text, not its word list
    assert banned_word_rule(blame) is None and shaming_rule(blame) is not None
    assert set(guardrails.TONE_RULES) == {"banned_words", "shaming"}
