"""Loaders for the data sets in ``data/`` (unchanged third-party files; see each folder's SOURCE.md).

Each loader checks every row and raises :class:`DataFormatError` naming ``file:line`` on the first bad one,
so a corrupted or hand-edited file fails loudly instead of shifting results.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from lib import paths

JOURNAL_DIR = paths.DATA / "journal_entries"
JOURNAL_SPLITS = {"test": "ed_situations_test.csv", "dev": "ed_situations_dev.csv"}

# EmpatheticDialogues label index (1-based) -> emotion name. The source gives only integers; SOURCE.md
# explains this mapping (MoEL emo_map order + 1, checked against word use for 28 of 32 labels).
ED_EMOTIONS: dict[int, str] = dict(enumerate([
    "surprised", "excited", "annoyed", "proud", "angry", "sad", "grateful", "lonely", "impressed", "afraid",
    "disgusted", "confident", "terrified", "hopeful", "anxious", "disappointed", "joyful", "prepared",
    "guilty", "furious", "nostalgic", "jealous", "anticipating", "embarrassed", "content", "devastated",
    "sentimental", "caring", "trusting", "ashamed", "apprehensive", "faithful",
], start=1))


class DataFormatError(ValueError):
    """A data file has a row that does not match its documented format; the message names file:line."""


def load_journal_entries(split: str = "test", path: Path | None = None) -> pd.DataFrame:
    """EmpatheticDialogues situation prompts as journal entries.

    Columns: ``entry_id`` (``ed-<split>-<row>``, row counted from 0 after the header), ``split``,
    ``emotion_label`` (1–32), ``emotion`` (inferred name, see SOURCE.md), ``text``.
    """
    if path is None:
        if split not in JOURNAL_SPLITS:
            raise ValueError(f"split must be one of {sorted(JOURNAL_SPLITS)}, not {split!r}")
        path = JOURNAL_DIR / JOURNAL_SPLITS[split]
    rows = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header != ["label", "content"]:
            raise DataFormatError(f"{path}:1: expected header 'label,content', found {header!r}")
        for index, record in enumerate(reader):
            line = reader.line_num
            if len(record) != 2:
                raise DataFormatError(f"{path}:{line}: expected 2 fields (label, content), found {len(record)}")
            label_text, content = record
            try:
                label = int(label_text)
            except ValueError:
                raise DataFormatError(f"{path}:{line}: label {label_text!r} is not an integer") from None
            if label not in ED_EMOTIONS:
                raise DataFormatError(f"{path}:{line}: label {label} is outside 1–{len(ED_EMOTIONS)}")
            if not content.strip():
                raise DataFormatError(f"{path}:{line}: empty content")
            rows.append({"entry_id": f"ed-{split}-{index}", "split": split, "emotion_label": label,
                         "emotion": ED_EMOTIONS[label], "text": content.strip()})
    return pd.DataFrame(rows)


NOVELEVAL_DIR = paths.DATA / "relevance_qrels" / "noveleval"


def _split_lines(path: Path, n_fields: int, sep: str | None) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-empty line; a line with another field count is an error."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            fields = line.split(sep, n_fields - 1) if sep else line.split()
            if len(fields) != n_fields:
                raise DataFormatError(f"{path}:{line_no}: expected {n_fields} fields, found {len(fields)}")
            rows.append((line_no, fields))
    return rows


def load_noveleval(folder: Path = NOVELEVAL_DIR) -> pd.DataFrame:
    """NovelEval-2306 (Sun et al., EMNLP 2023): one row per judged (query, passage) with the human grade 0–2.

    Columns: ``qid``, ``query``, ``docid``, ``passage``, ``human_grade``.
    """
    queries = {qid: text for _, (qid, text) in _split_lines(folder / "queries.tsv", 2, "\t")}
    corpus = {docid: text for _, (docid, text) in _split_lines(folder / "corpus.tsv", 2, "\t")}
    rows = []
    qrels = folder / "qrels.txt"
    for line_no, (qid, _, docid, grade) in _split_lines(qrels, 4, None):
        if qid not in queries or docid not in corpus:
            raise DataFormatError(f"{qrels}:{line_no}: unknown query {qid!r} or passage {docid!r}")
        if grade not in ("0", "1", "2"):
            raise DataFormatError(f"{qrels}:{line_no}: grade {grade!r} is not 0, 1 or 2")
        rows.append({"qid": qid, "query": queries[qid], "docid": docid, "passage": corpus[docid],
                     "human_grade": int(grade)})
    return pd.DataFrame(rows)


SUMMEVAL_FILE = paths.DATA / "human_judgments" / "summeval_geval" / "summeval.json"
SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def load_summeval(path: Path = SUMMEVAL_FILE) -> pd.DataFrame:
    """SummEval as used by G-Eval: one row per (doc_id, system_id) with ``source``, ``system_output`` and the
    mean expert rating (1–5) of each dimension as a column."""
    import json

    records = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for index, record in enumerate(records):
        try:
            rows.append({"doc_id": record["doc_id"], "system_id": record["system_id"], "source": record["source"],
                         "system_output": record["system_output"],
                         **{d: float(record["scores"][d]) for d in SUMMEVAL_DIMENSIONS}})
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(f"{path}: record {index} ({exc.__class__.__name__}: {exc})") from None
    return pd.DataFrame(rows)
