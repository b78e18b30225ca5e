"""Chapter 06: adaptation of conversational recommender systems (CRS) to controlled mid-dialogue preference
shifts, simulated over a closed movie universe. The methodology (terms, formulas, schemas, thresholds, risks)
is ``lib/crs/METHODOLOGY.md``; it changes in the same commit as the code it describes.

* :mod:`~lib.crs.concepts` — concepts (grounded ``field=value`` strings), canonical values, aliases, E(x).
* :mod:`~lib.crs.universe` — the item universe (ReDial + OpenDialKG languages), its indexes and ``recommend``.
* :mod:`~lib.crs.simulator` — the user simulator: focus-field state machine, shifts, hidden target, phrasing.
* :mod:`~lib.crs.systems` — the CRS systems under test (LLM, retrieval template, memoryless LLM, stale, echo).
* :mod:`~lib.crs.metrics` — CC, CR, I, TAS, recovery, interference, CAS, concept errors, segmentation.
* :mod:`~lib.crs.judge` — the per-conversation LLM rubric (coherence, personalisation, proactiveness).
* :mod:`~lib.crs.records` — the conversation, log and results contracts and their validated JSONL files.
* :mod:`~lib.crs.runner` — ``run_sessions``: scripts → conversations → metrics → judge → files.
* :mod:`~lib.crs.summaries` — the tables behind the chapter's figures.
* :mod:`~lib.crs.config` — every weight and threshold, in one config.
"""
