"""Chapter 06: adaptation of conversational recommender systems (CRS) to controlled mid-dialogue preference
shifts, simulated over a closed movie universe. The methodology (terms, formulas, schemas, thresholds, risks)
is ``lib/crs/METHODOLOGY.md``; it changes in the same commit as the code it describes.

* :mod:`~lib.crs.concepts` — concepts (grounded ``field=value`` strings), canonical values, E(x).
* :mod:`~lib.crs.universe` — the item universe, its indexes and ``recommend``.
"""
