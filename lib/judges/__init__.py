"""LLM judges and rule-based scores. Each judge takes a rubric or task and typed items (source, output, and
context where the prompt has one; :mod:`lib.judges.items`) and returns a typed result that says whether it
failed; a failure is never turned into a score."""
