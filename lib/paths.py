"""Every folder of the study, derived from this package's location (never from the working directory)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT: Path = Path(__file__).resolve().parent.parent
DATA: Path = ROOT / "data"
NOTEBOOKS: Path = ROOT / "notebooks"
# STUDY_OUTPUT_DIR redirects every output (tables, ledgers, executed notebooks, cache) for side runs such
# as `make bench`, so they never overwrite the committed report.
OUTPUTS: Path = Path(os.environ.get("STUDY_OUTPUT_DIR") or ROOT / "outputs")
TABLES: Path = OUTPUTS / "tables"
EXECUTED_NOTEBOOKS: Path = OUTPUTS / "notebooks"
HTML: Path = OUTPUTS / "html"
# The LLM response cache: one SQLite file (lib.llm.cache); LLM_CACHE names another one for a run, read here so
# that the gateway and `python -m lib.llm.cache` (prune, check) act on the same file.
LLM_CACHE: Path = Path(os.environ.get("LLM_CACHE") or OUTPUTS / "llm-cache.sqlite")
# The study's committed cache, whatever LLM_CACHE and STUDY_OUTPUT_DIR say: only a chapter run adds to it
# (lib.llm.cache.chapter_run), so that nobody's own calls land in the study's files.
COMMITTED_LLM_CACHE: Path = ROOT / "outputs" / "llm-cache.sqlite"
LEDGERS: Path = OUTPUTS / "ledgers"
PROMPTS: Path = Path(__file__).resolve().parent / "prompts"
# Large local artefacts (the assembled GGUF, server pid/log files); git-ignored.
LOCAL_CACHE: Path = ROOT / ".cache"
MODELS: Path = LOCAL_CACHE / "models"
RUN: Path = LOCAL_CACHE / "run"
# Every MiniLM vector the study's chapter runs computed (lib.embeddings.VectorStore); git-ignored, rebuilt on demand.
EMBEDDING_STORE: Path = LOCAL_CACHE / "embeddings.sqlite"


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, else as given: messages, tables and notebook
    metadata carry no machine-specific prefix, and outputs outside the repository (``STUDY_OUTPUT_DIR``)
    still work."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
