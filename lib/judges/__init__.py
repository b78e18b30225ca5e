"""LLM judges and rule-based metrics. Each judge takes (criteria or task, source, output) and returns a
typed result that says whether it failed; a failure is never turned into a score."""
