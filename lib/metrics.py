"""One protocol for everything that scores an output, and one registry of the study's metrics, looked up by name.

In the style of ir_measures: each metric is a declarative object (:class:`Metric`) with a name, the *construct*
it claims to measure, its *scale*, aliases, a description and a citation, registered once by the module that
defines it (:func:`register`) and found by name or alias (:func:`get`). ``python -m lib.metrics`` lists every
metric of the study (:func:`table`). Kinds (:data:`KINDS`): an LLM judge (``lib.judges.relevance``,
``lib.judges.methods``, ``lib.judges.bias``), a G-Eval rubric (``lib.judges.geval``), a rule
(``lib.judges.guardrails``), an outcome (``lib.judges.outcomes``), a nugget score (``lib.nuggets``), a monitor
metric (``lib.monitor``), a CRS metric or the conversation judge (``lib.crs.metrics``, ``lib.crs.judge``), a
ranking measure (``lib.analysis.ranking``).

One call for every metric, and one argument order for every judge: ``metric.score(gateway, items, **options)``,
the gateway first (None for a metric that calls no LLM), then what is judged, then the options. It returns one
:class:`Result` per item: ``score``, ``reason`` and ``failed``. A failure is never a score: a failed result has
score NaN, ``failed`` True and its ``failure_kind`` (``undefined`` where the metric is not defined for the item,
e.g. a vital-nugget score without vital nuggets). ``reason`` exists for every metric; rules fill it, LLM judges
leave it empty for now.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, get_args

import pandas as pd

if TYPE_CHECKING:
    from lib.llm.gateway import Gateway

Kind = Literal["LLM judge", "G-Eval rubric", "rule", "outcome", "nugget", "monitor", "CRS", "ranking"]
KINDS: tuple[Kind, ...] = get_args(Kind)
UNDEFINED = "undefined"  # the failure kind of an item the metric has no value for (not an error of a call)

# The modules that define the study's metrics; each registers its own at import (:func:`study_metrics`).
METRIC_MODULES = ("lib.judges.relevance", "lib.judges.methods", "lib.judges.bias", "lib.judges.geval",
                  "lib.judges.guardrails", "lib.judges.outcomes", "lib.nuggets", "lib.monitor", "lib.crs.metrics",
                  "lib.crs.judge", "lib.analysis.ranking")


@dataclass(frozen=True)
class Scale:
    """The values a metric's score takes: ``levels`` when it takes only those, else any value in [low, high]."""

    low: float
    high: float
    levels: tuple[float, ...] | None = None

    @classmethod
    def of(cls, *levels: float) -> Scale:
        """The discrete scale of ``levels``."""
        return cls(min(levels), max(levels), tuple(levels))

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or math.isnan(value):
            return False
        if self.levels is not None:
            return value in self.levels
        return self.low - 1e-9 <= value <= self.high + 1e-9

    def __str__(self) -> str:
        def number(x: float) -> str:
            return f"{x:g}"

        if self.levels is not None:
            return "{" + ", ".join(map(number, self.levels)) + "}"
        return f"[{number(self.low)}, {number(self.high)}]"


@dataclass(frozen=True)
class Result:
    """One item's score. ``failed``: no score (``score`` NaN), with ``failure_kind`` saying why; never a default.
    ``reason``: why the item got its score ("" where the metric gives none)."""

    score: float
    reason: str = ""
    failed: bool = False
    failure_kind: str | None = None

    def __post_init__(self) -> None:
        if self.failed != (self.failure_kind is not None):
            raise ValueError("a failed result names its failure_kind, and only a failed result does")
        if self.failed != math.isnan(self.score):
            raise ValueError(f"a failed result has score NaN and a scored one a number, got score {self.score} with "
                             f"failed={self.failed}")

    @classmethod
    def failure(cls, kind: str, reason: str = "") -> Result:
        """The result of an item that got no score, and why (``kind``: the gateway's failure kind, or
        :data:`UNDEFINED`)."""
        return cls(float("nan"), reason, True, kind)

    @classmethod
    def of(cls, score: float | None, failure_kind: str | None = UNDEFINED, reason: str = "") -> Result:
        """``score`` as a result; None (no score) as a failure of ``failure_kind``."""
        return cls.failure(failure_kind or UNDEFINED, reason) if score is None else cls(float(score), reason)


class Metric(Protocol):
    """What every metric of the study declares, and its one call."""

    @property
    def name(self) -> str:
        """The metric's name in tables and figures; unique in the registry."""

    @property
    def kind(self) -> Kind: ...

    @property
    def construct(self) -> str:
        """What the metric claims to measure."""

    @property
    def scale(self) -> Scale: ...

    @property
    def aliases(self) -> tuple[str, ...]:
        """Other names it is found by (column names, ir_measures' spelling)."""

    @property
    def description(self) -> str:
        """How the score is computed."""

    @property
    def citation(self) -> str: ...

    def score(self, gateway: Gateway | None, items: Sequence[Any], **options: Any) -> list[Result]:
        """One result per item, in order."""


Call = Callable[..., list[Result]]
M = TypeVar("M", bound=Metric)


@dataclass(frozen=True)
class FunctionMetric:
    """A metric whose call is a function ``call(gateway, items, **options) -> list[Result]`` (the kinds that have
    no definition object of their own: LLM judges, rules, outcomes, nuggets, monitor and CRS metrics)."""

    name: str
    kind: Kind
    construct: str
    scale: Scale
    description: str
    citation: str
    call: Call = field(repr=False, compare=False)
    aliases: tuple[str, ...] = ()

    def score(self, gateway: Gateway | None, items: Sequence[Any], **options: Any) -> list[Result]:
        return checked(self, self.call(gateway, items, **options), len(items))


def checked(metric: Metric, results: list[Result], n_items: int) -> list[Result]:
    """``results`` after checking there is one per item and every score lies on the metric's scale."""
    if len(results) != n_items:
        raise ValueError(f"{metric.name}: {len(results)} results for {n_items} items")
    off = [r.score for r in results if not r.failed and r.score not in metric.scale]
    if off:
        raise ValueError(f"{metric.name}: scores {off[:3]} are off its scale {metric.scale}")
    return results


def judge_gateway(gateway: Gateway | None, metric: str) -> Gateway:
    """``gateway``, without which an LLM judge (the metric called ``metric``) cannot score."""
    if gateway is None:
        raise ValueError(f"{metric} is an LLM judge: pass the judge's gateway")
    return gateway


REGISTRY: dict[str, Metric] = {}  # name -> metric, in the order of registration (the order of tables)
ALIASES: dict[str, str] = {}  # alias -> name


def register(metric: M) -> M:
    """Add ``metric`` under its name and aliases; a name or alias already taken (as a name or an alias) is an error."""
    if metric.kind not in KINDS:
        raise ValueError(f"{metric.name}: kind {metric.kind!r} is not one of {KINDS}")
    for key in (metric.name, *metric.aliases):
        if key in REGISTRY or key in ALIASES:
            raise ValueError(f"metric name {key!r} is already registered (by {ALIASES.get(key, key)!r})")
    if len(set(metric.aliases) | {metric.name}) != len(metric.aliases) + 1:
        raise ValueError(f"{metric.name}: an alias repeats the name or another alias")
    REGISTRY[metric.name] = metric
    ALIASES.update(dict.fromkeys(metric.aliases, metric.name))
    return metric


def study_metrics() -> dict[str, Metric]:
    """Every metric of the study (the modules of :data:`METRIC_MODULES` imported, so each has registered its
    own), by name in the order of registration."""
    for module in METRIC_MODULES:
        importlib.import_module(module)
    return dict(REGISTRY)


def get(name: str) -> Metric:
    """The metric called ``name`` or having it as an alias."""
    study_metrics()
    found = REGISTRY.get(ALIASES.get(name, name))
    if found is None:
        raise KeyError(f"no metric is called {name!r}; known: {', '.join(REGISTRY)}")
    return found


def score(name: str, gateway: Gateway | None, items: Sequence[Any], **options: Any) -> list[Result]:
    """The results of the metric called ``name`` (or an alias) on ``items``, checked against its scale."""
    metric = get(name)
    return checked(metric, metric.score(gateway, items, **options), len(items))


class KindView(Mapping[str, Any]):
    """The registered metrics of one kind, by name, live (a metric registered later shows): what a module that
    defines one kind reads instead of a registry of its own (``geval.RUBRICS``, ``ranking.MEASURES``)."""

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def _names(self) -> list[str]:
        return [name for name, metric in REGISTRY.items() if metric.kind == self.kind]

    def __getitem__(self, name: str) -> Any:
        metric = REGISTRY.get(ALIASES.get(name, name))
        if metric is None or metric.kind != self.kind:
            raise KeyError(f"no {self.kind} metric is called {name!r}; known: {', '.join(self._names())}")
        return metric

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"KindView({self.kind!r}: {', '.join(self._names())})"


def of_kind(kind: Kind) -> Mapping[str, Any]:
    """The registered metrics of ``kind`` by name (:class:`KindView`)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {KINDS}")
    return KindView(kind)


def table(metrics: Mapping[str, Metric] | None = None) -> pd.DataFrame:
    """One row per metric (default: every metric of the study): name, kind, construct, scale, aliases, citation,
    description."""
    metrics = study_metrics() if metrics is None else metrics
    return pd.DataFrame([{"name": m.name, "kind": m.kind, "construct": m.construct, "scale": str(m.scale),
                          "aliases": ", ".join(m.aliases), "citation": m.citation, "description": m.description}
                         for m in metrics.values()]).set_index("name")


def main() -> None:
    """``python -m lib.metrics``: every metric of the study, by kind, with its construct, scale and citation."""
    listing = table()
    for kind, rows in listing.groupby("kind", sort=False):
        print(f"## {kind}")
        for name, r in rows.iterrows():
            aka = f" (also {r.aliases})" if r.aliases else ""
            print(f"- {name}{aka}: {r.construct}; scale {r.scale}; {r.citation}")
        print()


if __name__ == "__main__":
    # run as a script this file is the module __main__, while the metric modules register in lib.metrics
    import lib.metrics

    lib.metrics.main()
