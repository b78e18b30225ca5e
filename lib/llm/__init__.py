"""LLM access for the study: ``gateway`` (structured output, retries, cache, replay, ledger), ``cache``, and
``server`` (the embedded xllamacpp server; ``python -m lib.llm.server --help``)."""
