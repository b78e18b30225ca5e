"""LLM judges and rule-based scores. Each judge takes the gateway, then typed items (source, output, and
context where the prompt has one; :mod:`lib.judges.items`), then its rubric or options, and returns a typed
result that says whether it failed; a failure is never turned into a score. Each is a metric of the study in
the one registry :mod:`lib.metrics`."""
