"""Helper package of the LLM-as-judge study: data loaders, the LLM gateway, judges, and the analysis
(measures, comparisons, validity, statistics).

Notebooks import from here; nothing in ``lib`` imports a notebook. Folders come from :mod:`lib.paths`.
"""
