"""The top floor: one module per chapter (``ch01`` … ``ch07``). Each holds what a notebook would otherwise loop
over or write as prose: the orchestration that builds a chapter's tables, its ``findings(tables, params)`` — a
frozen record whose fields are the chapter's decisions (:class:`lib.verdicts.Verdict` rows of the ``verdicts``
table) and their evidence — and the formatters of that record (what the numbers say, threats, conclusion), which
decide nothing. Each function is tested on small hand-made tables and records. Notebooks keep the narrative,
parameters, calls, tables and figures.

Arrows point down: a chapter module may import anything in ``lib``; nothing in ``lib`` imports a chapter module
except the front page, which reads a chapter's ``bookkeeping`` sentence when it has no primary verdict.

The package imports no chapter module itself: a notebook imports its own (``from lib.chapters import ch06``) and
does not pay for the others' imports.
"""
