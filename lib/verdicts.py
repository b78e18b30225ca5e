"""Verdicts as data: every conclusion the study states is a :class:`Verdict` record, decided by one rule
(:func:`decide`) from its evidence, and a row of the ``verdicts`` table (``outputs/tables/verdicts.parquet``,
schema in :data:`lib.tables.SCHEMAS`). Prose, threats, conclusions and the front page only format these records
(:func:`sentence`, :func:`headline`); nothing that formats decides.

A verdict answers "does this system measure (or do) what it claims?" for one *check*:

* ``known answer`` — an answer worse by construction (a distractor, a counterfactual reply, an injected defect):
  does the metric score the real answer above it? Estimate: AUC of real over worse, chance 0.5.
* ``human labels`` — agreement with human judgments against a declared target (κ_w ≥ 0.40, ρ ≥ 0.30).
* ``known behaviour`` — systems built to behave differently: does the metric order them as built?
* ``comparison`` — a declared comparison between two systems (the ranker under test and its baseline).

The vocabulary of outcomes (:data:`VERDICTS`) is closed. The rule, for a claim that the estimate lies on the
``direction`` side of ``threshold`` with a smallest effect of interest ``margin``:

1. **holds** (known answers: **sees**) — a one-sided test in the declared direction rejects at ``alpha``
   (``p``, already adjusted for its family), or, with no test, the interval lies wholly on the claimed side;
2. **fails** — the result goes the wrong way: a one-sided test in the opposite direction rejects
   (``p_against``), or, with no test, the interval lies wholly on the other side. A significant result the
   wrong way is evidence against the claim, never support;
3. **ruled out** (known answers: **blind**) — the interval lies within ``threshold ± margin``: an effect as large
   as the margin is ruled out (equivalence by the two one-sided tests' interval, Schuirmann 1987);
4. **undetermined** — none of these: the data cannot decide (an interval straddling the threshold, or no
   interval because there are fewer than :data:`lib.analysis.stats.MIN_CI_UNITS` units).

A verdict is ``confirmatory`` when its question, threshold and method were declared before its data were seen
(and the units were not used to choose the method); ``by_construction`` when it holds by how the system and
the check are built (it then tests the code, not the metric). ``depends_on`` names the verdicts that qualify it
(the caveat a headline must carry, e.g. a ranking comparison judged by a judge that is blind to the difference
the ranker is about).

Each seed system the study reproduces from a specification (:data:`SEED_SYSTEMS`) owns the verdict keys that judge
it; :func:`matrix` sets every one of them against its verdicts, one without a row included.
"""
from __future__ import annotations

import fcntl
import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Literal

import numpy as np
import pandas as pd

from lib import paths, tables

Check = Literal["known answer", "human labels", "known behaviour", "comparison"]
Direction = Literal["higher", "lower"]

VERDICTS: dict[str, str] = {
    "sees": "known answer: the metric scores the real answer above the one worse by construction",
    "blind": "known answer: the interval lies within chance ± the margin, so the metric cannot see the defect",
    "holds": "the claim is supported in its declared direction",
    "fails": "the result goes significantly the wrong way: evidence against the claim",
    "ruled out": "the interval lies within the threshold ± the smallest effect of interest",
    "undetermined": "the data cannot decide: the interval straddles the threshold, or there is none",
}
CHECKS: tuple[Check, ...] = ("known answer", "human labels", "known behaviour", "comparison")

# The outcome words of a known-answer check: it "sees" or is "blind" where another check "holds" or is "ruled out".
_KNOWN_ANSWER_WORDS = {"holds": "sees", "ruled out": "blind"}


@dataclass(frozen=True)
class Claim:
    """What a verdict tests, declared before its data: the estimate should lie on the ``direction`` side of
    ``threshold``; ``margin`` is the smallest effect of interest (0: no equivalence statement); ``alpha`` the
    level of its test."""

    check: Check
    threshold: float
    direction: Direction = "higher"
    margin: float = 0.0
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"unknown check {self.check!r}; one of {CHECKS}")
        if self.margin < 0 or not 0 < self.alpha < 1:
            raise ValueError(f"margin must be ≥ 0 and alpha in (0, 1), got {self.margin} and {self.alpha}")


def decide(claim: Claim, low: float, high: float, p: float | None = None, p_against: float | None = None) -> str:
    """The outcome of ``claim`` (one word of :data:`VERDICTS`) from its interval (``low``, ``high``; NaN when there
    is none) and, when a test decides it, ``p`` (one-sided in the declared direction) and ``p_against``
    (one-sided the other way), both already adjusted for their family. Rules in the module docstring."""
    sign = 1.0 if claim.direction == "higher" else -1.0
    has_interval = math.isfinite(low) and math.isfinite(high)
    if p is not None or p_against is not None:
        supported = p is not None and math.isfinite(p) and p < claim.alpha
        against = p_against is not None and math.isfinite(p_against) and p_against < claim.alpha
    else:
        supported = has_interval and min(sign * (low - claim.threshold), sign * (high - claim.threshold)) > 0
        against = has_interval and max(sign * (low - claim.threshold), sign * (high - claim.threshold)) < 0
    if supported:
        outcome = "holds"
    elif against:
        outcome = "fails"
    elif (has_interval and claim.margin > 0 and claim.threshold - claim.margin < low
          and high < claim.threshold + claim.margin):
        outcome = "ruled out"
    else:
        outcome = "undetermined"
    return _KNOWN_ANSWER_WORDS.get(outcome, outcome) if claim.check == "known answer" else outcome


@dataclass(frozen=True)
class Verdict:
    """One conclusion with its evidence; a row of the ``verdicts`` table (columns: these fields).

    ``key`` is stable across runs ("04.primary", "03.known_answer.value_mismatch") so a run's verdict can be set
    beside an earlier run's; ``system`` is the thing judged (a judge, a metric, a ranker, a CRS); ``construct``
    what it claims to measure; ``statistic`` the estimate's name ("AUC", "κ_w", "mean difference"); ``unit`` /
    ``units`` the independent unit the interval resampled and its count; ``test`` how p was computed (empty
    when the interval decides); ``evidence`` the table the numbers come from. Build with :func:`verdict`, which
    decides ``verdict`` from the rest."""

    chapter: str
    key: str
    system: str
    construct: str
    check: str
    statistic: str
    estimate: float
    ci_low: float
    ci_high: float
    unit: str
    units: int
    threshold: float
    direction: str
    margin: float
    alpha: float
    test: str
    p: float
    p_against: float
    verdict: str
    primary: bool
    confirmatory: bool
    by_construction: bool
    evidence: str
    depends_on: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {tuple(VERDICTS)}")
        if not self.key.startswith(f"{self.chapter}."):
            raise ValueError(f"verdict key {self.key!r} must start with its chapter {self.chapter!r}")


def verdict(chapter: str, key: str, system: str, construct: str, claim: Claim, statistic: str, estimate: float,
            ci_low: float, ci_high: float, unit: str, units: int, evidence: str, *, test: str = "",
            p: float | None = None, p_against: float | None = None, primary: bool = False,
            confirmatory: bool = False, by_construction: bool = False,
            depends_on: Sequence[str] = ()) -> Verdict:
    """A :class:`Verdict` decided by :func:`decide` from ``claim`` and the evidence; ``key`` is prefixed with the
    chapter ("primary" in chapter "04" becomes "04.primary")."""
    nan = float("nan")
    return Verdict(chapter=chapter, key=f"{chapter}.{key}", system=system, construct=construct, check=claim.check,
                   statistic=statistic, estimate=float(estimate), ci_low=float(ci_low), ci_high=float(ci_high),
                   unit=unit, units=int(units), threshold=claim.threshold, direction=claim.direction,
                   margin=claim.margin, alpha=claim.alpha, test=test, p=nan if p is None else float(p),
                   p_against=nan if p_against is None else float(p_against),
                   verdict=decide(claim, ci_low, ci_high, p, p_against), primary=primary,
                   confirmatory=confirmatory, by_construction=by_construction, evidence=evidence,
                   depends_on=tuple(depends_on))


COLUMNS = tuple(f.name for f in fields(Verdict))


def frame(verdicts: Iterable[Verdict]) -> pd.DataFrame:
    """The records as rows of the ``verdicts`` table (``depends_on`` joined by ", ")."""
    rows = [asdict(v) | {"depends_on": ", ".join(v.depends_on)} for v in verdicts]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def records(table: pd.DataFrame) -> list[Verdict]:
    """The rows of a ``verdicts`` table as records (the inverse of :func:`frame`)."""
    out = []
    for row in table.to_dict("records"):
        depends = tuple(k for k in str(row["depends_on"]).split(", ") if k)
        out.append(Verdict(**{**row, "depends_on": depends, "units": int(row["units"]),
                              "primary": bool(row["primary"]), "confirmatory": bool(row["confirmatory"]),
                              "by_construction": bool(row["by_construction"])}))
    return out


def write(chapter: str, verdicts: Sequence[Verdict]) -> str:
    """Replace chapter ``chapter``'s rows of ``outputs/tables/verdicts.parquet`` by ``verdicts`` (every other
    chapter's rows kept), under a file lock so chapters run side by side do not lose each other's rows. Rows are
    ordered by chapter, then as given, so a rerun writes the same bytes."""
    if any(v.chapter != chapter for v in verdicts):
        raise ValueError(f"every verdict written by chapter {chapter} must belong to it")
    keys = [v.key for v in verdicts]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate verdict keys in chapter {chapter}: {sorted(k for k in keys if keys.count(k) > 1)}")
    paths.TABLES.mkdir(parents=True, exist_ok=True)
    with open(paths.TABLES / "verdicts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        others = [v for v in read() if v.chapter != chapter]
        rows = sorted([*others, *verdicts], key=lambda v: v.chapter)  # stable: a chapter's rows keep their order
        return tables.write_table(frame(rows), "verdicts")


def read() -> list[Verdict]:
    """Every verdict of the last runs of the chapters (empty before any chapter has written one)."""
    path = paths.TABLES / "verdicts.parquet"
    return records(pd.read_parquet(path)) if path.exists() else []


def decimals(*values: float, least: int = 2, most: int = 4) -> int:
    """Decimals that show the largest of ``values`` to two significant digits (at least ``least``, at most
    ``most``): an AUC 0.54 keeps 2, a mean difference −0.0024 with interval −0.0063 to 0.0012 gets 4."""
    finite = [abs(x) for x in values if np.isfinite(x) and x != 0]
    if not finite:
        return least
    return int(min(most, max(least, 1 - math.floor(math.log10(max(finite))))))


def number(x: float, digits: int = 2) -> str:
    """A value for prose: ``digits`` decimals, "–" when missing, a rounded-away sign dropped."""
    if not np.isfinite(x):
        return "–"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def evidence_text(v: Verdict, digits: int | None = None) -> str:
    """The evidence of a verdict in words: "AUC 0.54 (0.42 to 0.67, 40 entries; chance 0.50 ± 0.10)"; with a test,
    its p and method. ``digits`` decimals, by default as the size of the numbers asks (:func:`decimals`)."""
    if digits is None:
        digits = decimals(v.estimate, v.ci_low, v.ci_high)
    interval = (f"{number(v.ci_low, digits)} to {number(v.ci_high, digits)}, "
                if np.isfinite(v.ci_low) and np.isfinite(v.ci_high) else "no interval: ")
    reference = {"known answer": "chance"}.get(v.check, "threshold")
    margin = f" ± {number(v.margin, digits)}" if v.margin > 0 else ""
    test = (f"; {v.test}, p = {v.p:.3g}" + (f", p the other way = {v.p_against:.3g}"
                                          if np.isfinite(v.p_against) else "")
            if v.test and np.isfinite(v.p) else "")
    return (f"{v.statistic} {number(v.estimate, digits)} ({interval}{v.units} {v.unit}; {reference} "
            f"{number(v.threshold, digits)}{margin}{test})")


def sentence(v: Verdict, digits: int | None = None) -> str:
    """One verdict in one sentence: "**judge (E[g])** — tells a real nudge from one written for the opposite
    values: **undetermined**; AUC 0.54 (…)." with the flags that qualify it."""
    flags = [flag for flag, on in (("holds by construction", v.by_construction),
                                   ("confirmatory", v.confirmatory)) if on]
    flag_text = f" [{', '.join(flags)}]" if flags else ""
    return f"**{v.system}** — {v.construct}: **{v.verdict}**{flag_text}; {evidence_text(v, digits)}."


def brief(v: Verdict) -> str:
    """A verdict in a table cell: "tells a real nudge from …: **sees**; AUC 0.83 (0.73–0.92, 40 entries)" — what is
    claimed, the verdict, and the estimate with its interval over the units (the claim's threshold and test are in
    :func:`sentence`)."""
    digits = decimals(v.estimate, v.ci_low, v.ci_high)
    interval = (f"{number(v.ci_low, digits)}–{number(v.ci_high, digits)}, "
                if np.isfinite(v.ci_low) and np.isfinite(v.ci_high) else "no interval, ")
    return (f"{v.construct}: **{v.verdict}**; {v.statistic} {number(v.estimate, digits)} "
            f"({interval}{v.units} {v.unit})")


def headline(v: Verdict, all_verdicts: Mapping[str, Verdict]) -> str:
    """A verdict as a front-page headline with the caveats that decide how to read it: the verdicts it depends
    on, each as a "Caveat: …" sentence; a caveat missing from ``all_verdicts`` is named as missing, never dropped
    (a headline without the caveat that decides it would read as a finding)."""
    caveat = "".join(f" Caveat: {sentence(all_verdicts[key])}" if key in all_verdicts else
                     f" Caveat: {key} (not in the verdicts table; run its chapter)." for key in v.depends_on)
    return sentence(v) + caveat


def changes(verdicts: Sequence[Verdict], earlier: Mapping[str, str]) -> pd.DataFrame:
    """The verdicts whose outcome differs from what an earlier run of the study stated (``earlier``: key → that
    run's outcome word, recorded in the chapter module with the commit it comes from): key, system, construct,
    earlier, now. A key the earlier run did not state is new, not changed, and is left out."""
    rows = [{"key": v.key, "system": v.system, "claims to measure": v.construct, "earlier": earlier[v.key],
             "now": v.verdict} for v in verdicts if v.key in earlier and earlier[v.key] != v.verdict]
    return pd.DataFrame(rows, columns=["key", "system", "claims to measure", "earlier", "now"])


def table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """The verdicts as a display table: system, construct, check, verdict, evidence, flags."""
    return pd.DataFrame([{"system": v.system, "claims to measure": v.construct, "check": v.check,
                          "verdict": v.verdict, "evidence": evidence_text(v),
                          "by construction": "yes" if v.by_construction else "",
                          "confirmatory": "yes" if v.confirmatory else ""} for v in verdicts])


@dataclass(frozen=True)
class SeedSystem:
    """One of the judge-based systems the study reproduces from a specification (``../shared/specs/<spec>``,
    mapped to chapters by that folder's README), and the verdict keys that judge it: ``keys`` are
    :func:`fnmatch.fnmatchcase` patterns over ``Verdict.key``; ``chapter`` is the chapter that runs it and shows it.
    A key belongs to at most one seed system (:func:`seed_system`)."""

    name: str
    spec: str
    chapter: str
    keys: tuple[str, ...]

    @property
    def chapters(self) -> str:
        """The chapters that state its verdicts or run it, from ``chapter`` and its key patterns: "05, 07"."""
        return ", ".join(sorted({self.chapter, *(pattern[:2] for pattern in self.keys)}))


# Every seed system of issue #35, in the order the front page lists them. Patterns name keys of rows the chapters
# write today and of rows still to come (the triads, CulturalSensitivity, nugget creation): a system whose rows do
# not exist yet shows "no verdict yet" in the matrix.
SEED_SYSTEMS: tuple[SeedSystem, ...] = (
    SeedSystem("nudge relevance judge", "000_nudge_ranking.md", "03", ("03.known_answer.*", "03.first_candidate")),
    SeedSystem("rankers", "000_nudge_ranking.md", "04", ("02.*", "04.*")),
    SeedSystem("ToneEmpathy", "001_geval_metrics.md", "03", ("03.geval.ToneEmpathy.*", "03.rule.tone.*")),
    SeedSystem("CulturalSensitivity", "001_geval_metrics.md", "03",
               ("03.geval.CulturalSensitivity.*", "03.rule.cultural.*")),
    SeedSystem("FinancialSafety", "001_geval_metrics.md", "03", ("03.guardrail.FinancialSafety*",)),
    SeedSystem("nugget creation", "002_nuggetized_feedback.md", "05", ("05.*creation*",)),
    SeedSystem("nugget importance", "002_nuggetized_feedback.md", "05", ("05.*importance*",)),
    SeedSystem("nugget assignment", "002_nuggetized_feedback.md", "05", ("05.*assignment*",)),
    # ALCE's importance row belongs to importance above, so the ALCE rows are named one reading at a time; the
    # human ceiling and the length baseline are the references the scores are read against.
    SeedSystem("nugget scores", "002_nuggetized_feedback.md", "05",
               ("05.primary", "05.alce.vital.*", "05.alce.vital_argmax.*", "05.alce.all.*", "05.alce.length.*",
                "05.alce.human_ceiling", "07.nuggets.*")),
    SeedSystem("traditional RAG triad", "002_nuggetized_feedback.md", "05", ("05.triad.traditional.*",)),
    SeedSystem("nuggetized RAG triad", "002_nuggetized_feedback.md", "05", ("05.triad.nuggetized.*",)),
    SeedSystem("nightly monitor", "003_nightly_evaluation.md", "05", ("05.monitor.*", "07.monitor*")),
    # 06.judge_vs_tas judges the conversation judge, so TAS/CAS names its own rows of chapter 06.
    SeedSystem("TAS/CAS", "004_crs_preference_shift.md", "06",
               ("06.primary", "06.known_behaviour*", "06.confirmatory*", "06.known_answer.*", "07.construct.*")),
    SeedSystem("conversation judge", "004_crs_preference_shift.md", "06",
               ("06.judge_vs_tas", "06.judge.*", "07.crs_judge.*")),
    SeedSystem("relevance judge on DL19", "000_nudge_ranking.md", "07",
               ("07.primary*", "07.relevance.*", "07.bias.*")),
    SeedSystem("G-Eval on SummEval", "001_geval_metrics.md", "07", ("07.geval.*",)),
)
# Verdict keys that judge no seed system, each pattern with the reason.
UNASSIGNED: tuple[tuple[str, str], ...] = (
    ("01.construction.*", "they check the study's known answers (is each distractor worse by construction, seen "
                          "without the judge), which qualify chapter 03's rows; they judge no seed system"),
    ("05.triad.construction.*", "they check the triads' known answers (is each injected defect worse, seen by "
                                "MiniLM without a judge), which qualify chapter 05's triad rows"),
)
NO_VERDICT_YET = "no verdict yet"
NO_SEED_SYSTEM = "no pattern of a seed system or of UNASSIGNED names them"


def seed_system(key: str) -> str | None:
    """The name of the seed system whose patterns match verdict ``key`` (None: no seed system's); a key that
    matches two systems is an error in :data:`SEED_SYSTEMS`, never resolved by their order."""
    names = [s.name for s in SEED_SYSTEMS if any(fnmatch.fnmatchcase(key, pattern) for pattern in s.keys)]
    if len(names) > 1:
        raise ValueError(f"verdict key {key!r} matches more than one seed system: {names}")
    return names[0] if names else None


def unassigned(keys: Iterable[str]) -> dict[str, list[str]]:
    """The ``keys`` of no seed system by the reason they are left out (:data:`UNASSIGNED`); a key that no pattern
    there names is under :data:`NO_SEED_SYSTEM` (a new row whose system :data:`SEED_SYSTEMS` does not name yet)."""
    out: dict[str, list[str]] = {}
    for key in keys:
        if seed_system(key) is None:
            reason = next((why for pattern, why in UNASSIGNED if fnmatch.fnmatchcase(key, pattern)), NO_SEED_SYSTEM)
            out.setdefault(reason, []).append(key)
    return out


def matrix(table: pd.DataFrame) -> pd.DataFrame:
    """The seed systems against their verdicts, from a ``verdicts`` table: one row per :data:`SEED_SYSTEMS` entry
    in order with its spec, chapters, number of rows, the count of each word of :data:`VERDICTS`, its lead verdict
    (its first primary row, else its first row, in table order, as :func:`brief`; :data:`NO_VERDICT_YET` when
    it has none) and whether any of its rows is confirmatory. Rows of no seed system are not counted."""
    by_system: dict[str | None, list[Verdict]] = {}
    for v in records(table):
        by_system.setdefault(seed_system(v.key), []).append(v)
    rows = []
    for system in SEED_SYSTEMS:
        found = by_system.get(system.name, [])
        lead = next((v for v in found if v.primary), found[0] if found else None)
        rows.append({"seed system": system.name, "spec": system.spec, "chapter(s)": system.chapters,
                     "rows": len(found),
                     **{word: sum(v.verdict == word for v in found) for word in VERDICTS},
                     "lead verdict": NO_VERDICT_YET if lead is None else brief(lead),
                     "confirmatory": any(v.confirmatory for v in found)})
    return pd.DataFrame(rows, columns=["seed system", "spec", "chapter(s)", "rows", *VERDICTS, "lead verdict",
                                       "confirmatory"])
