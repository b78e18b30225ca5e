"""Loaders for the data sets in ``data/`` (unchanged third-party files; see each folder's SOURCE.md).

Every loader reads its files through the same primitives, so a damaged file fails loudly, with a
:class:`DataFormatError` naming ``file:line`` (``file:line:column`` inside a whole-file JSON document),
instead of shifting results:

* bytes are decoded strictly as UTF-8 (the message names the line of the first invalid byte), and a NUL
  byte is refused;
* a CSV record is named by the line it *starts* on, so an unclosed quote points at its own record rather
  than at the line, often far below, where the parser gave up;
* a tab-separated line must have the expected number of fields; a JSON line or a whole-file JSON document
  that does not parse is named by line (and column);
* each loader then checks every row against the columns documented in its docstring.

``data/MANIFEST.json`` (project-owned) gives, for every file a loader reads by default, its record count
(as that loader's reader counts them), size and sha256. It is a JSON file next to the data rather than a
constant here so that regenerating it rewrites data, not code, and a data change shows up in one diff with
the file it describes. Once a listed file has passed the format checks, a different record count is refused
at the line where the file ends (a file cut at a line end, or mid-line where the cut still parses), and a
different sha256 is refused naming both hashes (an edited record). A file in ``data/`` that the manifest
does not list, or any file in ``data/`` without the manifest, is an error naming what is missing. Hashing
the bytes already read costs a few milliseconds for the largest file. A file outside ``data/`` (an explicit
``path=`` or ``folder=``: tests, your own data) gets every format check but no manifest check, and each
such load says so with an :class:`UncheckedDataWarning` naming the file and the number of records read (for
your own data, ``warnings.simplefilter("ignore", UncheckedDataWarning)`` silences it).

Size and sha256 are of the bytes with CRLF line ends read as LF, which is how every reader parses them: a
checkout that converted line ends (git's core.autocrlf on Windows) holds the same data and passes, and the
committed files, LF throughout with no ``\\r`` at all, are hashed as they are. (So CRLF instead of LF
inside a quoted CSV field is not an edit either: the field reads as the same text.)

After a deliberate change to a data file (or a new loader), regenerate the manifest with::

    python -m lib.data manifest

and check that its counts still match the SOURCE.md files (``tests/test_data.py`` compares them).
"""
from __future__ import annotations

import argparse
import bisect
import contextvars
import csv
import functools
import hashlib
import io
import json
import re
import types
import typing
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lib import paths

MANIFEST_FILE = paths.DATA / "MANIFEST.json"


class DataFormatError(ValueError):
    """A data file does not match its documented format or its manifest entry, or cannot be compared with its
    entry (no manifest, or no entry for it); the message names the file, with the line (and column) where one
    is at fault."""


class UncheckedDataWarning(UserWarning):
    """A file outside the manifest's folder was loaded with the format checks only: nothing tells whether all
    of its records are there or unchanged."""


# ---------------------------------------------------------------------------------------------------------
# Reading primitives: the one implementation every loader uses.

@dataclass(frozen=True)
class _TextFile:
    """A data file's bytes, CRLF line ends read as LF, decoded strictly as UTF-8, with the sha256 and size of
    those bytes (read once, so the checksum is of exactly the bytes that were parsed)."""

    path: Path
    text: str
    sha256: str
    n_bytes: int

    @functools.cached_property
    def _line_starts(self) -> list[int]:
        return [0, *(match.end() for match in re.finditer("\n", self.text))]

    def line_and_column(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset (columns count characters, as JSONDecodeError does)."""
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    @property
    def last_line(self) -> int:
        """Number of the last line that holds more than whitespace (where a truncated file ends)."""
        return self.line_and_column(len(self.text.rstrip()))[0]

    def nonblank_lines(self) -> Iterator[tuple[int, str]]:
        """(line number, text) of every line holding more than whitespace; only ``\\n`` ends a line (str.splitlines
        would also split at U+2028 and other characters that may sit inside a field)."""
        for line_no, line in enumerate(self.text.split("\n"), start=1):
            if line.strip():
                yield line_no, line


def _read_text(path: Path) -> _TextFile:
    """The file decoded strictly as UTF-8; an invalid byte or a NUL byte is refused naming its line.

    CRLF line ends become LF first, so a checkout that converted them (git's core.autocrlf on Windows) parses,
    counts and hashes like the committed file (LF throughout).
    """
    raw = Path(path).read_bytes().replace(b"\r\n", b"\n")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(f"{path}:{line}: invalid UTF-8 (byte 0x{raw[exc.start]:02x}: {exc.reason})") from None
    source = _TextFile(Path(path), text, hashlib.sha256(raw).hexdigest(), len(raw))
    nul = text.find("\0")
    if nul >= 0:
        raise DataFormatError(f"{path}:{source.line_and_column(nul)[0]}: NUL byte (the file is binary or corrupted)")
    return source


# The manifest: set to a dict while build_manifest() runs the loaders, so the readers record each file
# instead of checking it against the (possibly outdated) manifest.
_RECORDING: contextvars.ContextVar[dict[str, dict[str, Any]] | None] = contextvars.ContextVar("recording", default=None)
_MANIFEST_FIELDS = {"records": int, "counted": str, "bytes": int, "sha256": str}
_REMEDY = "Restore it from git; if the change is deliberate, regenerate the manifest: python -m lib.data manifest"


@functools.cache
def _manifest(manifest_file: Path) -> dict[str, dict[str, Any]]:
    """The manifest's entries by path relative to its folder (read once per process)."""
    entries = {}
    for location, (key,), entry in _parse_json_records(_read_text(manifest_file), (dict,)):
        _check_fields(manifest_file, location, entry, _MANIFEST_FIELDS, what=f"entry {key!r}")
        entries[key] = entry
    return entries


def _check_against_manifest(source: _TextFile, n_records: int, counted: str) -> None:
    """Refuse a file listed in the manifest whose record count or sha256 differs from its entry.

    Called by each reader after the file's last record was handed out (and checked by the loader), so a
    specific format error is reported before this whole-file one. A file outside the manifest's folder is
    not checked, and an :class:`UncheckedDataWarning` says so; a file inside it without an entry (or without
    a manifest) is refused, so deleting an entry cannot switch its check off.
    """
    folder = MANIFEST_FILE.parent.resolve()
    resolved = source.path.resolve()
    if not resolved.is_relative_to(folder):
        # stacklevel 1 (this line): the caller sits at a different depth below each loader, and the message
        # names the file.
        warnings.warn(UncheckedDataWarning(f"{source.path}: only the format checks were applied ({n_records:,} "
                                           f"{counted} read): the file is outside {folder}, so {MANIFEST_FILE} has "
                                           f"no record count or sha256 for it"), stacklevel=1)
        return
    key = resolved.relative_to(folder).as_posix()
    recording = _RECORDING.get()
    if recording is not None:
        recording[key] = {"records": n_records, "counted": counted, "bytes": source.n_bytes, "sha256": source.sha256}
        return
    if not MANIFEST_FILE.is_file():
        raise DataFormatError(f"{source.path}: cannot be checked: {MANIFEST_FILE} is missing. Restore it from git "
                              f"or regenerate it from the data files: python -m lib.data manifest")
    expected = _manifest(MANIFEST_FILE).get(key)
    if expected is None:
        raise DataFormatError(f"{source.path}: cannot be checked: {MANIFEST_FILE} has no entry {key!r}. Restore the "
                              f"manifest from git; for a new data file, have a loader read it by default (see "
                              f"_load_every_default_file) and regenerate the manifest: python -m lib.data manifest")
    if n_records != expected["records"]:
        raise DataFormatError(f"{source.path}:{source.last_line}: the file ends here after {n_records:,} {counted}, "
                              f"but {MANIFEST_FILE} expects {expected['records']:,}: it is truncated or was "
                              f"modified. {_REMEDY}")
    if source.sha256 != expected["sha256"]:
        raise DataFormatError(f"{source.path}: sha256 {source.sha256} ({source.n_bytes:,} bytes) differs from "
                              f"{expected['sha256']} ({expected['bytes']:,} bytes) in {MANIFEST_FILE}; "
                              f"the count of {n_records:,} {counted} matches, so the content was edited. {_REMEDY}")


def _csv_records(path: Path, header: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(start line, fields) of every CSV record after ``header``.

    Parsed strictly (a stray or unclosed quote is an error, not silently folded into a field), and every
    message names the line where the record starts: an unclosed quote makes its record swallow the lines
    after it, so the line where the parser fails is not where the damage is.
    """
    source = _read_text(path)
    reader = csv.reader(io.StringIO(source.text, newline=""), strict=True)

    def next_record() -> tuple[int, list[str] | None]:
        start = reader.line_num + 1
        try:
            return start, next(reader, None)
        except csv.Error as exc:
            raise DataFormatError(f"{path}:{start}: {exc} in the CSV record that starts on this line and runs to "
                                  f"line {reader.line_num} (an unclosed quote here?)") from None

    _, found_header = next_record()
    if found_header != header:
        raise DataFormatError(f"{path}:1: expected header {','.join(header)!r}, found {found_header!r}")
    n_records = 0
    while True:
        start, record = next_record()
        if record is None:
            break
        n_records += 1
        yield start, record
    _check_against_manifest(source, n_records, "CSV records after the header")


def _delimited_lines(path: Path, n_fields: int, sep: str | None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank line, which must have ``n_fields`` fields.

    With ``sep`` the line is split at the first ``n_fields - 1`` separators and the last field keeps any
    further ones (NovelEval passage 14-17 is a pasted table full of tabs); with ``sep=None`` it is split on
    whitespace (TREC qrels).
    """
    source = _read_text(path)
    n_lines = 0
    for line_no, line in source.nonblank_lines():
        fields = line.split(sep, n_fields - 1) if sep else line.split()
        if len(fields) != n_fields:
            raise DataFormatError(f"{path}:{line_no}: expected {n_fields} fields, found {len(fields)}")
        n_lines += 1
        yield line_no, fields
    _check_against_manifest(source, n_lines, "non-blank lines")


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSON-lines file; a line that does not parse is an error."""
    source = _read_text(path)
    n_lines = 0
    for line_no, line in source.nonblank_lines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{line_no}:{exc.colno}: broken JSON line ({exc.msg})") from None
        n_lines += 1
        yield line_no, value
    _check_against_manifest(source, n_lines, "non-blank lines")


_JSON_DECODER = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _parse_json_records(source: _TextFile, levels: tuple[type, ...]) -> list[tuple[str, tuple, Any]]:
    """(``line:column``, keys, value) of every value ``len(levels)`` containers deep in a whole-file JSON document.

    ``levels`` gives the container type (dict or list) expected at each depth; keys are the object keys or
    array indices on the way down. The containers are walked here only so each record keeps its position for
    error messages (the movie files are one line each, hence the column); the records themselves are decoded
    by the standard decoder. A duplicate key at a walked depth is an error (json.loads would keep the last and
    silently drop a record).
    """
    text = source.text
    found: list[tuple[int, tuple, Any]] = []

    def skip_space(position: int) -> int:
        space = _JSON_SPACE.match(text, position)
        assert space is not None  # the pattern matches the empty string
        return space.end()

    def parse(position: int, depth: int, keys: tuple) -> int:
        """Parse the value at ``position``: collect it at the record depth, else walk its members; return its end."""
        position = skip_space(position)
        if depth == len(levels):
            value, end = _JSON_DECODER.raw_decode(text, position)
            found.append((position, keys, value))
            return end
        is_object = levels[depth] is dict
        opener, closer = "{}" if is_object else "[]"
        if not text.startswith(opener, position):
            raise json.JSONDecodeError(f"Expecting {'an object' if is_object else 'an array'}", text, position)
        position = skip_space(position + 1)
        if text.startswith(closer, position):
            return position + 1
        seen_keys: set[str | int] = set()
        index = 0
        while True:
            key: str | int = index
            index += 1
            if is_object:
                if not text.startswith('"', position):
                    raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, position)
                key, key_end = _JSON_DECODER.raw_decode(text, position)
                if key in seen_keys:
                    raise json.JSONDecodeError(f"Duplicate key {key!r}", text, position)
                seen_keys.add(key)
                position = skip_space(key_end)
                if not text.startswith(":", position):
                    raise json.JSONDecodeError("Expecting ':' delimiter", text, position)
                position += 1
            position = skip_space(parse(position, depth + 1, (*keys, key)))
            if text.startswith(",", position):
                position = skip_space(position + 1)
            elif text.startswith(closer, position):
                return position + 1
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, position)

    try:
        end = skip_space(parse(0, 0, ()))
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{source.path}:{exc.lineno}:{exc.colno}: broken JSON ({exc.msg})") from None
    return [("{}:{}".format(*source.line_and_column(offset)), keys, value) for offset, keys, value in found]


def _json_records(path: Path, levels: tuple[type, ...]) -> Iterator[tuple[str, tuple, Any]]:
    """(``line:column``, keys, value) of every record of a whole-file JSON document; see _parse_json_records."""
    source = _read_text(path)
    records = _parse_json_records(source, levels)
    yield from records
    _check_against_manifest(source, len(records), f"JSON entries at depth {len(levels)}")


class _NonEmptyStr:
    """Field type for :func:`_check_fields`: a str with at least one non-space character."""


def _has_type(value: Any, expected: Any) -> bool:
    """Whether ``value`` matches a field type: a type (matched exactly, so True is not an int), ``list[T]``,
    :class:`_NonEmptyStr`, a frozenset of allowed values, or a tuple of alternatives."""
    if isinstance(expected, tuple):
        return any(_has_type(value, alternative) for alternative in expected)
    if isinstance(expected, frozenset):
        return any(type(value) is type(allowed) and value == allowed for allowed in expected)
    if isinstance(expected, types.GenericAlias):
        (element,) = typing.get_args(expected)
        if typing.get_origin(expected) is not list:
            raise TypeError(f"unsupported field type {expected}: only list[T] is")
        return type(value) is list and all(_has_type(item, element) for item in value)
    if expected is _NonEmptyStr:
        return type(value) is str and bool(value.strip())
    return type(value) is expected


def _type_name(expected: Any) -> str:
    """How an error message names a field type of :func:`_has_type`."""
    if isinstance(expected, tuple):
        return " or ".join(_type_name(alternative) for alternative in expected)
    if isinstance(expected, frozenset):
        return "one of " + ", ".join(sorted(json.dumps(allowed) for allowed in expected))
    if expected is _NonEmptyStr:
        return "a non-empty string"
    if isinstance(expected, types.GenericAlias):
        return str(expected)  # list[str]
    return "null" if expected is type(None) else getattr(expected, "__name__", str(expected))


def _check_fields(path: Path, location: str | int, record: Any, required: Mapping[str, Any],
                  optional: Mapping[str, Any] | None = None, what: str = "record") -> None:
    """Refuse a JSON record that is not an object, lacks a required field, or has a field of the wrong type
    (fields not named here are allowed and ignored)."""
    if type(record) is not dict:
        raise DataFormatError(f"{path}:{location}: {what} is {type(record).__name__}, expected an object")
    for name, expected in {**required, **(optional or {})}.items():
        if name not in record:
            if name in required:
                raise DataFormatError(f"{path}:{location}: {what} has no field {name!r}")
            continue
        if not _has_type(record[name], expected):
            raise DataFormatError(f"{path}:{location}: {what} field {name!r} should be {_type_name(expected)}, "
                                  f"found {json.dumps(record[name])[:60]}")


def _check_unique(path: Path, location: str | int, key: Any, first_seen: dict[Any, str | int], what: str) -> None:
    """Refuse a key seen before in the same file (a repeated row would be counted twice)."""
    if key in first_seen:
        raise DataFormatError(f"{path}:{location}: {what} {key!r} repeats the one at {first_seen[key]}")
    first_seen[key] = location


# ---------------------------------------------------------------------------------------------------------
# Loaders.

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
    for index, (line, record) in enumerate(_csv_records(path, ["label", "content"])):
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


def load_noveleval(folder: Path = NOVELEVAL_DIR) -> pd.DataFrame:
    """NovelEval-2306 (Sun et al., EMNLP 2023): one row per judged (query, passage) with the human grade 0–2.

    Columns: ``qid``, ``query``, ``docid``, ``passage``, ``human_grade``.
    """
    queries = {qid: text for _, (qid, text) in _delimited_lines(folder / "queries.tsv", 2, "\t")}
    corpus = {docid: text for _, (docid, text) in _delimited_lines(folder / "corpus.tsv", 2, "\t")}
    rows = []
    qrels = folder / "qrels.txt"
    for line_no, (qid, _, docid, grade) in _delimited_lines(qrels, 4, None):
        if qid not in queries or docid not in corpus:
            raise DataFormatError(f"{qrels}:{line_no}: unknown query {qid!r} or passage {docid!r}")
        if grade not in ("0", "1", "2"):
            raise DataFormatError(f"{qrels}:{line_no}: grade {grade!r} is not 0, 1 or 2")
        rows.append({"qid": qid, "query": queries[qid], "docid": docid, "passage": corpus[docid],
                     "human_grade": int(grade)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# TREC files of one's own (trec_eval's formats, as ir_measures reads and writes them)

def load_qrels(path: Path) -> pd.DataFrame:
    """A TREC qrels file, ``qid iteration docid grade`` per line (whitespace-separated; the iteration is ignored), as
    ``qid``, ``docid``, ``human_grade`` (int) in file order: the columns the study's relevance judge and measures
    read. A grade that is not an integer, or a (qid, docid) judged twice, is an error naming the line."""
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, str | int] = {}
    for line_no, (qid, _, docid, grade) in _delimited_lines(path, 4, None):
        if not grade.lstrip("-").isdigit():
            raise DataFormatError(f"{path}:{line_no}: grade {grade!r} is not an integer")
        _check_unique(path, line_no, (qid, docid), first_seen, "(qid, docid)")
        rows.append({"qid": qid, "docid": docid, "human_grade": int(grade)})
    return pd.DataFrame(rows, columns=["qid", "docid", "human_grade"]).astype({"human_grade": "int64"})


def load_run(path: Path) -> pd.DataFrame:
    """A TREC run file, ``qid Q0 docid rank score tag`` per line, as ``qid``, ``docid``, ``rank`` (int), ``score``
    (float) and ``run`` (the tag) in file order. A rank or score that is not a number, or a (qid, docid) ranked
    twice, is an error naming the line."""
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, str | int] = {}
    for line_no, (qid, _, docid, rank, score, tag) in _delimited_lines(path, 6, None):
        try:
            values = int(rank), float(score)
        except ValueError:
            raise DataFormatError(f"{path}:{line_no}: rank {rank!r} or score {score!r} is not a number") from None
        _check_unique(path, line_no, (qid, docid), first_seen, "(qid, docid)")
        rows.append({"qid": qid, "docid": docid, "rank": values[0], "score": values[1], "run": tag})
    return pd.DataFrame(rows, columns=["qid", "docid", "rank", "score", "run"])


def write_qrels(frame: pd.DataFrame, path: Path, grade: str = "grade") -> Path:
    """A judge's grades as a TREC qrels file (``qid 0 docid grade`` per line, sorted by qid then docid), the file
    trec_eval and ir_measures read: one line per row of ``frame`` (columns ``qid``, ``docid`` and ``grade``). A row
    without a grade (a failed judgment) is refused, never written as 0."""
    missing = frame[grade].isna()
    if missing.any():
        raise ValueError(f"{int(missing.sum())} rows have no {grade!r} (failed judgments): leave them out or "
                         "judge them again; a qrels file has no way to say a grade is missing")
    ordered = frame.sort_values(["qid", "docid"], key=lambda c: c.astype(str))
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(ordered.qid, ordered.docid, ordered[grade],
                                                                         strict=True)))
    return path


SUMMEVAL_FILE = paths.DATA / "human_judgments" / "summeval_geval" / "summeval.json"
SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def load_summeval(path: Path = SUMMEVAL_FILE) -> pd.DataFrame:
    """SummEval as used by G-Eval: one row per (doc_id, system_id) with ``source``, ``reference`` (the
    CNN/DailyMail highlights of the document, for reference-based metrics such as ROUGE), ``system_output`` and
    the mean expert rating (1–5) of each dimension as a column."""
    rows = []
    for location, (index,), record in _json_records(path, (list,)):
        what = f"record {index}"
        _check_fields(path, location, record, {"doc_id": _NonEmptyStr, "system_id": _NonEmptyStr, "source": str,
                                               "reference": str, "system_output": str, "scores": dict}, what=what)
        scores = record["scores"]
        _check_fields(path, location, scores, dict.fromkeys(SUMMEVAL_DIMENSIONS, (int, float)), what=f"{what} scores")
        for dimension in SUMMEVAL_DIMENSIONS:
            if not 1 <= scores[dimension] <= 5:
                raise DataFormatError(f"{path}:{location}: {what} {dimension} {scores[dimension]} is outside 1–5")
        rows.append({"doc_id": record["doc_id"], "system_id": record["system_id"], "source": record["source"],
                     "reference": record["reference"], "system_output": record["system_output"],
                     **{dimension: float(scores[dimension]) for dimension in SUMMEVAL_DIMENSIONS}})
    return pd.DataFrame(rows)


DL19_FILE = paths.DATA / "relevance_qrels" / "trec_dl" / "dl19_bm25_top100_with_nist_labels.jsonl"


def load_dl19(path: Path = DL19_FILE, include_unjudged: bool = False) -> pd.DataFrame:
    """TREC Deep Learning 2019 passage task: the BM25 top-100 of 43 queries with passage text and NIST grade.

    One row per (query, passage). Columns: ``qid``, ``query``, ``docid``, ``bm25_rank`` (1–100),
    ``bm25_score``, ``passage``, ``human_grade`` (the NIST grade 0–3, the file's ``nist_relevance``; named as
    in :func:`load_noveleval` so the relevance judge reads both). By default only the 2,257 judged pairs, with
    an int ``human_grade``; ``include_unjudged=True`` keeps all 4,300, with a nullable ``Int64`` grade that is
    <NA> where NIST did not judge the pair.
    """
    fields = {"qid": _NonEmptyStr, "query": _NonEmptyStr, "docid": _NonEmptyStr, "bm25_rank": int,
              "bm25_score": (int, float), "passage": _NonEmptyStr, "nist_relevance": frozenset({0, 1, 2, 3, None})}
    kept = ["qid", "query", "docid", "bm25_rank", "bm25_score", "passage"]
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, str | int] = {}
    for line, record in _json_lines(path):
        _check_fields(path, line, record, fields)
        if record["bm25_rank"] < 1:
            raise DataFormatError(f"{path}:{line}: bm25_rank {record['bm25_rank']} is below 1")
        _check_unique(path, line, (record["qid"], record["docid"]), first_seen, "(qid, docid)")
        rows.append({**{name: record[name] for name in kept}, "human_grade": record["nist_relevance"]})
    table = pd.DataFrame(rows, columns=[*kept, "human_grade"]).astype({"human_grade": "Int64"})
    if include_unjudged:
        return table
    return table[table.human_grade.notna()].astype({"human_grade": "int64"}).reset_index(drop=True)


RAG_NUGGETS_DIR = paths.DATA / "rag_nuggets"


def load_rag25_topics(path: Path = RAG_NUGGETS_DIR / "rag25-topics-dev.tsv") -> pd.DataFrame:
    """TREC RAG 2025 development topics: one row per topic.

    Columns: ``qid`` (as in the nuggets file), ``narrative`` (the long, multi-part information need).
    """
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, str | int] = {}
    for line, (qid, narrative) in _delimited_lines(path, 2, "\t"):
        if not qid.strip() or not narrative.strip():
            raise DataFormatError(f"{path}:{line}: empty topic id or narrative")
        _check_unique(path, line, qid, first_seen, "topic")
        rows.append({"qid": qid, "narrative": narrative})
    return pd.DataFrame(rows)


def load_rag25_nuggets(path: Path = RAG_NUGGETS_DIR / "rag25-dev-nuggets.jsonl") -> pd.DataFrame:
    """TREC RAG 2025 development nuggets written or post-edited by NIST assessors: one row per nugget.

    Columns: ``qid``, ``nugget_index`` (position within its topic, from 0), ``nugget`` (the text),
    ``importance`` (``vital`` or ``okay``), ``source`` (``original``: kept as generated, or ``post-edit``),
    ``sub_narrative`` (the file's ``mapped_sub_narrative``, unchanged: most values are wrapped in literal
    double quotes, some are not, so no quote is stripped).
    """
    fields = {"text": _NonEmptyStr, "mapped_sub_narrative": str, "importance": frozenset({"vital", "okay"}),
              "source": frozenset({"original", "post-edit"})}
    rows: list[dict[str, Any]] = []
    first_seen: dict[Any, str | int] = {}
    for line, record in _json_lines(path):
        _check_fields(path, line, record, {"qid": _NonEmptyStr, "nuggets": list}, what="topic")
        _check_unique(path, line, record["qid"], first_seen, "topic")
        for index, nugget in enumerate(record["nuggets"]):
            _check_fields(path, line, nugget, fields, what=f"nugget {index}")
            rows.append({"qid": record["qid"], "nugget_index": index, "nugget": nugget["text"],
                         "importance": nugget["importance"], "source": nugget["source"],
                         "sub_narrative": nugget["mapped_sub_narrative"]})
    return pd.DataFrame(rows)


ALCE_UTILITY_FILE = RAG_NUGGETS_DIR / "alce_human_eval_utility_completed.json"
ALCE_DATASETS = ("asqa", "eli5")


def load_alce_utility(path: Path = ALCE_UTILITY_FILE) -> pd.DataFrame:
    """ALCE (Gao et al., EMNLP 2023) human ratings of the utility of RAG answers: one row per answer.

    Columns: ``dataset`` (``asqa`` or ``eli5``), ``system`` (the run's file name, as in the source),
    ``qid``, ``question``, ``answer`` (may be empty: 22 are, all rated 1), ``utility`` (1–5).
    The file is ``{dataset: {system: {qid: record}}}``; each system also has an ``overall_results`` entry
    with its automatic metrics, which is not an answer and is skipped: 808 entries give 800 answers
    (2 datasets x 4 systems x 100 questions). The per-answer ``automatic_correctness_scores`` are not kept.
    """
    fields = {"id": _NonEmptyStr, "question": _NonEmptyStr, "output": str, "utility_score": frozenset(range(1, 6))}
    rows = []
    for location, (dataset, system, qid), record in _json_records(path, (dict, dict, dict)):
        if dataset not in ALCE_DATASETS:
            raise DataFormatError(f"{path}:{location}: dataset {dataset!r} is not one of {ALCE_DATASETS}")
        if qid == "overall_results":
            continue
        what = f"{dataset}/{system}/{qid}"
        _check_fields(path, location, record, fields, what=what)
        if record["id"] != qid:
            raise DataFormatError(f"{path}:{location}: {what} has id {record['id']!r}, not its key")
        rows.append({"dataset": dataset, "system": system, "qid": qid, "question": record["question"],
                     "answer": record["output"], "utility": record["utility_score"]})
    return pd.DataFrame(rows)


def short_alce_system(run_name: str) -> str:
    """A readable name for an ALCE run file: without the dataset prefix, the seed/azure suffix and the file
    extension (``asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure-sample4.json.rerank`` → ``gpt-35-turbo-gtr-shot2-
    ndoc5-sample4-rerank``)."""
    name = run_name.split("-", 1)[1] if run_name.split("-", 1)[0] in ALCE_DATASETS else run_name
    return name.replace(".json.rerank", "-rerank").replace(".json", "").replace("-42-azure", "").replace("-42", "")


MOVIES_DIR = paths.DATA / "movies"


def _load_movies(path: Path, required: Mapping[str, Any], optional: Mapping[str, Any]) -> pd.DataFrame:
    """One row per item of an iEvaLM-CRS ``id2info`` file (``{item_id: {field: value}}``): ``item_id``, then
    the given fields in the given order, None where an optional field is absent."""
    rows = []
    for location, (item_id,), info in _json_records(path, (dict,)):
        _check_fields(path, location, info, required, optional, what=f"item {item_id!r}")
        rows.append({"item_id": item_id, **{name: info.get(name) for name in [*required, *optional]}})
    return pd.DataFrame(rows, columns=["item_id", *required, *optional])


def load_redial_movies(path: Path = MOVIES_DIR / "redial_id2info.json") -> pd.DataFrame:
    """ReDial's movie set (iEvaLM-CRS): one row per movie, every field present for every movie.

    Columns: ``item_id``, ``name`` (the title, ending in "(YYYY)" for most: the only year there is),
    ``genre``, ``plot`` (may be empty), ``director``, ``writer``, ``star`` (lists of str, may be empty),
    ``imdb_id``. There is no language field.
    """
    return _load_movies(path, {"name": _NonEmptyStr, "genre": list[str], "plot": str, "director": list[str],
                               "writer": list[str], "star": list[str], "imdb_id": _NonEmptyStr}, {})


def load_opendialkg_movies(path: Path = MOVIES_DIR / "opendialkg_id2info.json") -> pd.DataFrame:
    """OpenDialKG's movie set (iEvaLM-CRS): one row per movie.

    Columns: ``item_id``, ``name``, then the optional fields, None where the movie lacks them: ``year``
    (str, as in the file), ``actor``, ``director``, ``genre``, ``language``, ``writer`` (lists of str;
    Freebase-style values, with duplicates). There is no plot field.
    """
    return _load_movies(path, {"name": _NonEmptyStr},
                        {"year": _NonEmptyStr, **dict.fromkeys(["actor", "director", "genre", "language", "writer"],
                                                               list[str])})


# ---------------------------------------------------------------------------------------------------------
# Regenerating the manifest.

def _load_every_default_file() -> None:
    """Run every loader on its default files: the files the manifest lists."""
    for split in JOURNAL_SPLITS:
        load_journal_entries(split)
    load_noveleval()
    load_summeval()
    load_dl19()
    load_rag25_topics()
    load_rag25_nuggets()
    load_alce_utility()
    load_redial_movies()
    load_opendialkg_movies()


def build_manifest() -> dict[str, dict[str, Any]]:
    """The manifest entry of every file the loaders read by default, measured by running them (with every
    format check, but without comparing to the current manifest)."""
    observed: dict[str, dict[str, Any]] = {}
    token = _RECORDING.set(observed)
    try:
        _load_every_default_file()
    finally:
        _RECORDING.reset(token)
    return dict(sorted(observed.items()))


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m lib.data manifest`` rewrites data/MANIFEST.json."""
    parser = argparse.ArgumentParser(prog="python -m lib.data", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["manifest"], help="rewrite data/MANIFEST.json from the data files")
    parser.parse_args(argv)
    manifest = build_manifest()
    MANIFEST_FILE.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _manifest.cache_clear()
    print(f"wrote {MANIFEST_FILE}: {len(manifest)} files")


if __name__ == "__main__":
    main()
