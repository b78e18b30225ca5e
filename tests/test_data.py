"""Data loaders: the real files load with their documented counts; a damaged file is refused with a
DataFormatError naming file:line. Damaged files are copies of the real ones, edited in tmp_path."""
from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from lib import data, paths
from lib.data import (
    ED_EMOTIONS,
    DataFormatError,
    load_alce_utility,
    load_dl19,
    load_journal_entries,
    load_noveleval,
    load_opendialkg_movies,
    load_rag25_nuggets,
    load_rag25_topics,
    load_redial_movies,
    load_summeval,
)

JOURNAL_TEST = paths.DATA / "journal_entries" / "ed_situations_test.csv"
SUMMEVAL = paths.DATA / "human_judgments" / "summeval_geval" / "summeval.json"
NOVELEVAL = paths.DATA / "relevance_qrels" / "noveleval"
DL19 = paths.DATA / "relevance_qrels" / "trec_dl" / "dl19_bm25_top100_with_nist_labels.jsonl"
RAG_TOPICS = paths.DATA / "rag_nuggets" / "rag25-topics-dev.tsv"
RAG_NUGGETS = paths.DATA / "rag_nuggets" / "rag25-dev-nuggets.jsonl"
ALCE = paths.DATA / "rag_nuggets" / "alce_human_eval_utility_completed.json"
REDIAL = paths.DATA / "movies" / "redial_id2info.json"
OPENDIALKG = paths.DATA / "movies" / "opendialkg_id2info.json"

# For tests where an intact copy outside data/ loads (unchecked, with a notice) before the damaged file
# under test is refused.
intact_copies_load_unchecked = pytest.mark.filterwarnings("ignore::lib.data.UncheckedDataWarning")


def edited_copy(source: Path, target: Path, line: int, edit: Callable[[bytes], bytes]) -> Path:
    """Copy ``source`` to ``target`` with line ``line`` (1-based) replaced by ``edit(line)``."""
    lines = source.read_bytes().split(b"\n")
    lines[line - 1] = edit(lines[line - 1])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\n".join(lines))
    return target


def test_real_journal_entries_load_with_documented_counts():
    test, dev = load_journal_entries("test"), load_journal_entries("dev")
    assert (len(test), len(dev)) == (2547, 2770)  # counts stated in data/journal_entries/SOURCE.md
    assert test.entry_id.is_unique and test.emotion_label.between(1, 32).all()
    assert test.iloc[0].emotion == "guilty" and test.iloc[0].text.startswith("I felt guilty")
    assert len(ED_EMOTIONS) == 32


@pytest.mark.parametrize("content, line, message", [
    ("label,text\n1,hi\n", 1, "expected header"),
    ('label,content\n3,"fine"\n7,"a",extra\n', 3, "expected 2 fields"),
    ('label,content\n3,"fine"\nseven,"a"\n', 3, "is not an integer"),
    ('label,content\n3,"fine"\n40,"a"\n', 3, "outside 1"),
    ('label,content\n3,"fine"\n\n4,"a"\n', 3, "found 0"),
    ('label,content\n3,"multi\nline"\n5,"  "\n', 4, "empty content"),
    ('label,content\n3,"multi\nline",x\n', 2, "expected 2 fields"),  # the line where the record starts
])
def test_malformed_row_names_file_and_line(tmp_path, content, line, message):
    path = tmp_path / "entries.csv"
    path.write_text(content)
    with pytest.raises(DataFormatError, match=rf"entries\.csv:{line}: .*{message}"):
        load_journal_entries("test", path=path)


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        load_journal_entries("train")


def test_unclosed_quote_names_the_line_where_its_record_starts(tmp_path):
    # Line 4 of the real file is a quoted record followed by unquoted ones; without its closing quote it
    # swallows lines 5-11 and the parser fails only at line 12, where the next quote is.
    original = JOURNAL_TEST.read_bytes().split(b"\n")
    assert original[3].endswith(b'"') and not any(b'"' in line for line in original[4:11])
    damaged = edited_copy(JOURNAL_TEST, tmp_path / "entries.csv", 4, lambda line: line[:-1])
    with pytest.raises(DataFormatError, match=r"entries\.csv:4: .*starts on this line and runs to line 12"):
        load_journal_entries("test", path=damaged)


READERS = {  # one loader per reading primitive: CSV, TSV, JSON lines, whole-file JSON
    "csv": (lambda path: load_journal_entries("test", path=path), JOURNAL_TEST),
    "tsv": (lambda path: load_noveleval(path.parent), NOVELEVAL / "corpus.tsv"),
    "jsonl": (load_dl19, DL19),
    "json": (load_summeval, SUMMEVAL),
}


def copy_for(reader: str, tmp_path: Path) -> Path:
    """Where a damaged copy of ``reader``'s real file goes (NovelEval also needs its two other files)."""
    _, source = READERS[reader]
    if reader == "tsv":
        for name in ("queries.tsv", "qrels.txt"):
            shutil.copy(NOVELEVAL / name, tmp_path / name)
    return tmp_path / source.name


@intact_copies_load_unchecked  # NovelEval's queries.tsv, read before the damaged corpus.tsv
@pytest.mark.parametrize("reader", READERS)
def test_invalid_utf8_names_the_line_of_the_first_bad_byte(tmp_path, reader):
    load, source = READERS[reader]
    damaged = edited_copy(source, copy_for(reader, tmp_path), 7, lambda line: line[:3] + b"\xe9t\xe9" + line[3:])
    with pytest.raises(DataFormatError, match=rf"{source.name}:7: invalid UTF-8 \(byte 0xe9"):
        load(damaged)


@intact_copies_load_unchecked  # NovelEval's queries.tsv, read before the damaged corpus.tsv
@pytest.mark.parametrize("reader", READERS)
def test_nul_byte_names_its_line(tmp_path, reader):
    load, source = READERS[reader]
    damaged = edited_copy(source, copy_for(reader, tmp_path), 9, lambda line: line[:3] + b"\0" + line[3:])
    with pytest.raises(DataFormatError, match=rf"{source.name}:9: NUL byte"):
        load(damaged)


def test_noveleval_loads_with_documented_counts():
    table = load_noveleval()
    assert len(table) == 420 and table.qid.nunique() == 21
    assert table.human_grade.value_counts().to_dict() == {0: 290, 2: 90, 1: 40}  # SOURCE.md counts


@intact_copies_load_unchecked  # queries.tsv and corpus.tsv, read before the damaged qrels.txt
@pytest.mark.parametrize("qrels, message", [
    ("0 Q0 0-0 0\n0 Q0 0-1\n", r"qrels\.txt:2: expected 4 fields"),
    ("0 Q0 0-0 0\n\n0 Q0 9-9 1\n", r"qrels\.txt:3: unknown query '0' or passage '9-9'"),
    ("0 Q0 0-0 3\n", r"qrels\.txt:1: grade '3'"),
])
def test_noveleval_malformed_qrels_line(tmp_path, qrels, message):
    (tmp_path / "queries.tsv").write_text("0\tA question?\n")
    (tmp_path / "corpus.tsv").write_text("0-0\tA passage.\n0-1\tAnother.\n")
    (tmp_path / "qrels.txt").write_text(qrels)
    with pytest.raises(DataFormatError, match=message):
        load_noveleval(tmp_path)


def test_noveleval_passage_with_tabs_is_one_field_but_a_missing_tab_is_refused(tmp_path):
    table = load_noveleval()
    assert table.set_index("docid").passage["14-17"].count("\t") == 23  # a pasted table, kept whole
    for name in ("corpus.tsv", "qrels.txt"):
        shutil.copy(NOVELEVAL / name, tmp_path / name)
    edited_copy(NOVELEVAL / "queries.tsv", tmp_path / "queries.tsv", 3, lambda line: line.replace(b"\t", b" "))
    with pytest.raises(DataFormatError, match=r"queries\.tsv:3: expected 2 fields, found 1"):
        load_noveleval(tmp_path)


def test_summeval_loads_with_documented_counts():
    table = load_summeval()
    assert len(table) == 1600 and table.doc_id.nunique() == 100 and table.system_id.nunique() == 16
    assert table.coherence.between(1, 5).all()


def summeval_record_line(index: int) -> int:
    """Line where record ``index`` of the real summeval.json opens (records are written with indent=4)."""
    lines = SUMMEVAL.read_text(encoding="utf-8").split("\n")
    return [n for n, line in enumerate(lines, start=1) if line == "    {"][index]


@pytest.mark.parametrize("field, value, message", [
    ("coherence", "7", r"record 3 coherence 7 is outside 1–5"),
    ("coherence", '"high"', r"record 3 scores field 'coherence' should be int or float, found \"high\""),
    ("doc_id", '""', r"record 3 field 'doc_id' should be a non-empty string"),
])
def test_summeval_bad_record_names_the_line_where_it_starts(tmp_path, field, value, message):
    start = summeval_record_line(3)
    lines = SUMMEVAL.read_text(encoding="utf-8").split("\n")
    at = next(n for n in range(start, len(lines)) if lines[n].lstrip().startswith(f'"{field}":'))
    damaged = edited_copy(SUMMEVAL, tmp_path / "s.json", at + 1,
                          lambda line: line.split(b":")[0] + b": " + value.encode() + b"," * line.endswith(b","))
    with pytest.raises(DataFormatError, match=rf"s\.json:{start}:5: {message}"):
        load_summeval(damaged)


def test_broken_json_names_line_and_column(tmp_path):
    start = summeval_record_line(10)
    damaged = edited_copy(SUMMEVAL, tmp_path / "s.json", start + 2, lambda line: line.replace(b'"', b"", 1))
    with pytest.raises(DataFormatError, match=rf"s\.json:{start + 2}:9: broken JSON \(Expecting property name"):
        load_summeval(damaged)
    cut = tmp_path / "cut.json"
    cut.write_bytes(SUMMEVAL.read_bytes()[:-1000])
    with pytest.raises(DataFormatError, match=r"cut\.json:\d+:\d+: broken JSON"):
        load_summeval(cut)


@pytest.fixture
def data_copy(tmp_path, monkeypatch) -> Path:
    """A data folder in tmp_path holding a copy of the real manifest, which the loaders now check files
    under this folder against: copy a real file to the same relative place, damage it, load it."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(data.MANIFEST_FILE, folder / "MANIFEST.json")
    monkeypatch.setattr(data, "MANIFEST_FILE", folder / "MANIFEST.json")
    return folder


def test_file_cut_mid_line_is_refused_with_its_count(data_copy):
    # The reported case: the file cut in the middle of line 39 (an unquoted record) parsed as 38 rows.
    cut = data_copy / "journal_entries" / "ed_situations_test.csv"
    lines = JOURNAL_TEST.read_bytes().split(b"\n")
    cut.parent.mkdir()
    cut.write_bytes(b"\n".join(lines[:38]) + b"\n" + lines[38][:20])
    with pytest.raises(DataFormatError, match=r"ed_situations_test\.csv:39: the file ends here after 38 CSV records "
                                              r"after the header, but .*MANIFEST\.json expects 2,547: it is truncated"):
        load_journal_entries("test", path=cut)


def test_file_cut_at_a_line_end_is_refused_with_its_count(data_copy):
    folder = data_copy / "relevance_qrels" / "noveleval"
    folder.mkdir(parents=True)
    for name in ("queries.tsv", "corpus.tsv", "qrels.txt"):
        shutil.copy(NOVELEVAL / name, folder / name)
    corpus = (NOVELEVAL / "corpus.tsv").read_bytes()
    (folder / "corpus.tsv").write_bytes(corpus[:corpus.rindex(b"\n", 0, -1) + 1])  # the last line dropped
    with pytest.raises(DataFormatError, match=r"corpus\.tsv:419: the file ends here after 419 non-blank lines, "
                                              r"but .* expects 420"):
        load_noveleval(folder)


def test_json_file_with_a_record_removed_is_refused_with_its_count(data_copy):
    shorter = data_copy / SUMMEVAL.relative_to(paths.DATA)
    shorter.parent.mkdir(parents=True)
    shorter.write_text(json.dumps(json.loads(SUMMEVAL.read_text(encoding="utf-8"))[:-1], indent=4), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"summeval\.json:\d+: the file ends here after 1,599 JSON entries"):
        load_summeval(shorter)


def test_edited_record_with_the_same_count_is_refused_by_its_checksum(data_copy):
    edited = edited_copy(JOURNAL_TEST, data_copy / "journal_entries" / "ed_situations_test.csv", 2,
                         lambda line: line.replace(b"guilty", b"guilt"))
    with pytest.raises(DataFormatError, match=r"ed_situations_test\.csv: sha256 [0-9a-f]{64} \(291,897 bytes\) "
                                              r"differs from 71c55dd[0-9a-f]{57} \(291,898 bytes\) .* the count "
                                              r"of 2,547 CSV records after the header matches, so the content was "
                                              r"edited"):
        load_journal_entries("test", path=edited)


def test_format_errors_come_before_the_manifest_check(data_copy):
    damaged = edited_copy(JOURNAL_TEST, data_copy / "journal_entries" / "ed_situations_test.csv", 6,
                          lambda line: b"40" + line[1:])
    with pytest.raises(DataFormatError, match=r"ed_situations_test\.csv:6: label 40 is outside 1–32"):
        load_journal_entries("test", path=damaged)


def test_a_file_outside_the_data_folder_gets_format_checks_but_no_manifest_check(tmp_path):
    edited = edited_copy(JOURNAL_TEST, tmp_path / "mine.csv", 2, lambda line: line.replace(b"guilty", b"guilt"))
    with pytest.warns(data.UncheckedDataWarning, match=r"mine\.csv: only the format checks were applied"):
        assert load_journal_entries("test", path=edited).text[0].startswith("I felt guilt when")
    edited_copy(JOURNAL_TEST, edited, 2, lambda line: line + b"\0")
    with pytest.raises(DataFormatError, match=r"mine\.csv:2: NUL byte"):
        load_journal_entries("test", path=edited)


def journal_cut_at_a_line_end(target: Path) -> Path:
    """The reported case: a copy of the ED test split that ends after 1,312 of its 2,547 records (one per line)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\n".join(JOURNAL_TEST.read_bytes().split(b"\n")[:1 + 1312]) + b"\n")
    return target


def test_a_file_outside_the_data_folder_is_loaded_with_a_notice_that_it_was_not_checked(tmp_path):
    cut = journal_cut_at_a_line_end(tmp_path / JOURNAL_TEST.name)
    with pytest.warns(data.UncheckedDataWarning, match=r"ed_situations_test\.csv: only the format checks were "
                                                       r"applied \(1,312 CSV records after the header read\): the "
                                                       r"file is outside .*, so .*MANIFEST\.json has no record count"):
        assert len(load_journal_entries("test", path=cut)) == 1312


def test_a_missing_manifest_is_an_error_naming_it_and_the_remedy(data_copy):
    copy = data_copy / JOURNAL_TEST.relative_to(paths.DATA)
    copy.parent.mkdir()
    shutil.copy(JOURNAL_TEST, copy)
    (data_copy / "MANIFEST.json").unlink()
    with pytest.raises(DataFormatError, match=r"ed_situations_test\.csv: cannot be checked: .*MANIFEST\.json is "
                                              r"missing\. .*python -m lib\.data manifest"):
        load_journal_entries("test", path=copy)


def test_a_data_file_whose_manifest_entry_was_deleted_is_refused(data_copy):
    manifest = json.loads((data_copy / "MANIFEST.json").read_text(encoding="utf-8"))
    del manifest["journal_entries/ed_situations_test.csv"]
    (data_copy / "MANIFEST.json").write_text(json.dumps(manifest), encoding="utf-8")
    cut = journal_cut_at_a_line_end(data_copy / JOURNAL_TEST.relative_to(paths.DATA))
    with pytest.raises(DataFormatError, match=r"ed_situations_test\.csv: cannot be checked: .*MANIFEST\.json has no "
                                              r"entry 'journal_entries/ed_situations_test\.csv'\. .*python -m lib"):
        load_journal_entries("test", path=cut)


@pytest.mark.parametrize("reader", READERS)
def test_a_crlf_checkout_loads_like_the_committed_file(data_copy, reader):
    load, source = READERS[reader]
    originals = [source]
    if reader == "tsv":  # NovelEval's loader reads its folder's three files
        originals = [NOVELEVAL / name for name in ("queries.tsv", "corpus.tsv", "qrels.txt")]
    copies = [data_copy / original.relative_to(paths.DATA) for original in originals]
    for original, copy in zip(originals, copies, strict=True):
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(original, copy)
    committed = load(data_copy / source.relative_to(paths.DATA))
    for copy in copies:
        copy.write_bytes(copy.read_bytes().replace(b"\n", b"\r\n"))
    pd.testing.assert_frame_equal(load(data_copy / source.relative_to(paths.DATA)), committed)


def test_manifest_lists_exactly_what_the_loaders_read():
    committed = json.loads(data.MANIFEST_FILE.read_text(encoding="utf-8"))
    assert data.build_manifest() == committed  # else: python -m lib.data manifest


# Where each SOURCE.md states a manifest file's record count (and size or sha256), as (file, SOURCE.md
# folder, statement); the test fills in the manifest's numbers and looks for the statement verbatim.
SOURCE_MD_STATEMENTS = [
    ("journal_entries/ed_situations_test.csv", "journal_entries", "`ed_situations_test.csv`: {records} rows"),
    ("journal_entries/ed_situations_dev.csv", "journal_entries", "`ed_situations_dev.csv`: {records} rows"),
    ("relevance_qrels/noveleval/queries.tsv", "relevance_qrels", "`queries.tsv` ({records} queries)"),
    ("relevance_qrels/noveleval/corpus.tsv", "relevance_qrels", "`corpus.tsv` ({records} passages"),
    ("relevance_qrels/noveleval/qrels.txt", "relevance_qrels", "`qrels.txt` ({records} judgments"),
    ("human_judgments/summeval_geval/summeval.json", "human_judgments/summeval_geval",
     "| `summeval.json` | {bytes} | {records} (100 CNN/DM docs x 16 systems)"),
    ("human_judgments/summeval_geval/summeval.json", "human_judgments/summeval_geval", "sha256 = {sha256}."),
    ("relevance_qrels/trec_dl/dl19_bm25_top100_with_nist_labels.jsonl", "relevance_qrels",
     "| `dl19_bm25_top100_with_nist_labels.jsonl` | {records} (43 queries x BM25 top-100)"),
    ("rag_nuggets/rag25-topics-dev.tsv", "rag_nuggets", "`rag25-topics-dev.tsv` ({bytes} bytes): {records} lines"),
    ("rag_nuggets/rag25-dev-nuggets.jsonl", "rag_nuggets",
     "`rag25-dev-nuggets.jsonl` ({bytes} bytes): {records} lines"),
    # SOURCE.md calls these 808 "human-rated answers", but one of the 101 entries per system is its
    # overall_results, so load_alce_utility returns 800 answers (see its test).
    ("rag_nuggets/alce_human_eval_utility_completed.json", "rag_nuggets",
     "`alce_human_eval_utility_completed.json` ({bytes} bytes)"),
    ("rag_nuggets/alce_human_eval_utility_completed.json", "rag_nuggets",
     "2 datasets x 4 systems x 101 questions = {records}"),
    ("movies/redial_id2info.json", "movies", "| `redial_id2info.json` | {bytes} | {records} |"),
    ("movies/opendialkg_id2info.json", "movies", "| `opendialkg_id2info.json` | {bytes} | {records} |"),
]


def test_manifest_agrees_with_the_source_md_files():
    manifest = json.loads(data.MANIFEST_FILE.read_text(encoding="utf-8"))
    assert {name for name, _, statement in SOURCE_MD_STATEMENTS if "{records}" in statement} == set(manifest)
    for name, folder, statement in SOURCE_MD_STATEMENTS:
        entry = manifest[name]
        numbers = {"records": f"{entry['records']:,}", "bytes": f"{entry['bytes']:,}", "sha256": entry["sha256"]}
        assert statement.format(**numbers) in (paths.DATA / folder / "SOURCE.md").read_text(encoding="utf-8")


def test_dl19_loads_the_judged_pairs_with_documented_counts():
    judged, everything = load_dl19(), load_dl19(include_unjudged=True)
    assert (len(judged), len(everything), judged.qid.nunique()) == (2257, 4300, 43)  # SOURCE.md counts
    assert judged.human_grade.value_counts().to_dict() == {0: 885, 1: 526, 2: 566, 3: 280}
    assert everything.human_grade.isna().sum() == 4300 - 2257 and everything.bm25_rank.between(1, 100).all()
    assert list(judged.columns) == ["qid", "query", "docid", "bm25_rank", "bm25_score", "passage", "human_grade"]


def test_rag25_topics_and_nuggets_load_with_documented_counts():
    topics, nuggets = load_rag25_topics(), load_rag25_nuggets()
    assert len(topics) == 22 and len(nuggets) == 1255  # SOURCE.md counts
    assert nuggets.importance.value_counts().to_dict() == {"vital": 925, "okay": 330}
    assert nuggets.source.value_counts().to_dict() == {"post-edit": 1171, "original": 84}
    assert set(nuggets.qid) == set(topics.qid) and topics.narrative.str.len().min() > 100


def test_alce_utility_loads_800_answers():
    table = load_alce_utility()
    # SOURCE.md's "808" counts each system's overall_results entry too (2 x 4 x 101); 800 are answers.
    assert len(table) == 800 and table.groupby(["dataset", "system"]).size().eq(100).all()
    assert table.groupby("dataset").system.nunique().to_dict() == {"asqa": 4, "eli5": 4}
    assert table.utility.between(1, 5).all() and (table.answer == "").sum() == 22


def test_movie_sets_load_with_documented_counts():
    redial, opendialkg = load_redial_movies(), load_opendialkg_movies()
    assert (len(redial), len(opendialkg)) == (6583, 3672)  # SOURCE.md counts
    empty = {field: int((redial[field].str.len() == 0).sum()) for field in ("plot", "writer", "director", "star")}
    assert empty == {"plot": 132, "writer": 194, "director": 75, "star": 81}
    present = opendialkg.drop(columns=["item_id", "name"]).notna().sum().to_dict()
    assert present == {"year": 2875, "actor": 2241, "director": 1616, "genre": 2426, "language": 2979, "writer": 2572}
    assert redial.item_id.is_unique and redial.set_index("item_id").name["100030"] == "Friends with Benefits (2011)"


def test_broken_json_line_names_file_and_line(tmp_path):
    damaged = edited_copy(DL19, tmp_path / "dl19.jsonl", 100, lambda line: line[:len(line) // 2])
    with pytest.raises(DataFormatError, match=r"dl19\.jsonl:100:\d+: broken JSON line \(Unterminated string"):
        load_dl19(damaged)


def test_json_lines_file_cut_mid_line_is_refused(data_copy):
    cut = data_copy / DL19.relative_to(paths.DATA)
    cut.parent.mkdir(parents=True)
    cut.write_bytes(DL19.read_bytes()[:-500])
    with pytest.raises(DataFormatError, match=r"nist_labels\.jsonl:4300:\d+: broken JSON line"):
        load_dl19(cut)
    lines = DL19.read_bytes().split(b"\n")
    cut.write_bytes(b"\n".join(lines[:4200]) + b"\n")  # cut at a line end: only the count can tell
    with pytest.raises(DataFormatError, match=r"nist_labels\.jsonl:4200: the file ends here after 4,200 non-blank"):
        load_dl19(cut)


def json_line_with(**fields) -> Callable[[bytes], bytes]:
    """An edit for edited_copy: the JSON line with ``fields`` set."""
    return lambda line: json.dumps({**json.loads(line), **fields}).encode()


def third_nugget_with(**fields) -> Callable[[bytes], bytes]:
    """An edit for edited_copy: the topic line with ``fields`` set in its third nugget."""
    def edit(line: bytes) -> bytes:
        topic = json.loads(line)
        topic["nuggets"][2].update(fields)
        return json.dumps(topic).encode()
    return edit


@pytest.mark.parametrize("load, source, line, edit, message", [
    (load_dl19, DL19, 7, json_line_with(nist_relevance=4),
     r":7: record field 'nist_relevance' should be one of 0, 1, 2, 3, null, found 4"),
    (load_dl19, DL19, 7, json_line_with(bm25_rank="7"), r":7: record field 'bm25_rank' should be int, found \"7\""),
    (load_dl19, DL19, 7, json_line_with(passage=" "), r":7: record field 'passage' should be a non-empty string"),
    (load_dl19, DL19, 7, json_line_with(bm25_rank=0), r":7: bm25_rank 0 is below 1"),
    (load_dl19, DL19, 8, lambda line: DL19.read_bytes().split(b"\n")[6],
     r":8: \(qid, docid\) \('264014', '\d+'\) repeats the one at 7"),
    (load_dl19, DL19, 9, lambda line: b"[1, 2]", r":9: record is list, expected an object"),
    (load_rag25_topics, RAG_TOPICS, 3, lambda line: line.replace(b"\t", b" "), r":3: expected 2 fields, found 1"),
    (load_rag25_topics, RAG_TOPICS, 5, lambda line: b"14" + line[line.index(b"\t"):],
     r":5: topic '14' repeats the one at 1"),
    (load_rag25_topics, RAG_TOPICS, 6, lambda line: line.split(b"\t")[0] + b"\t ", r":6: empty topic id or narrative"),
    (load_rag25_nuggets, RAG_NUGGETS, 3, third_nugget_with(importance="must"),
     r":3: nugget 2 field 'importance' should be one of \"okay\", \"vital\", found \"must\""),
    (load_rag25_nuggets, RAG_NUGGETS, 4, json_line_with(nuggets={}),
     r":4: topic field 'nuggets' should be list, found \{\}"),
    (load_rag25_nuggets, RAG_NUGGETS, 5, json_line_with(qid=None),
     r":5: topic field 'qid' should be a non-empty string"),
])
def test_malformed_row_in_a_new_loader_names_file_and_line(tmp_path, load, source, line, edit, message):
    damaged = edited_copy(source, tmp_path / source.name, line, edit)
    with pytest.raises(DataFormatError, match=rf"{re.escape(source.name)}{message}"):
        load(damaged)


def record_edited_copy(source: Path, target: Path, record_opener: str, old: str, new: str) -> str:
    """Copy a whole-file JSON ``source`` to ``target`` with the first ``old`` after ``record_opener`` replaced
    by ``new``; returns the ``line:column`` of the record, i.e. of the last character of ``record_opener``."""
    text = source.read_text(encoding="utf-8")
    start = text.index(record_opener) + len(record_opener) - 1
    at = text.index(old, text.index(record_opener))
    target.write_text(text[:at] + new + text[at + len(old):], encoding="utf-8")
    line, column = text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
    return f"{line}:{column}"


@pytest.mark.parametrize("load, source, record_opener, old, new, message", [
    (load_alce_utility, ALCE, '"7089015503030534342": {', '"utility_score": 5', '"utility_score": 6',
     r"asqa/asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure\.json/7089015503030534342 field 'utility_score' should be "
     r"one of 1, 2, 3, 4, 5, found 6"),
    (load_alce_utility, ALCE, '"7089015503030534342": {', '"id": "7089015503030534342"', '"id": "7"',
     r"asqa/.*/7089015503030534342 has id '7', not its key"),
    (load_alce_utility, ALCE, '"7089015503030534342": {', '"question": "', '"question": 3, "x": "',
     r"asqa/.*/7089015503030534342 field 'question' should be a non-empty string, found 3"),
    (load_redial_movies, REDIAL, '"100030": {', '"genre": ["comedy", "romance"]', '"genre": "comedy"',
     r"item '100030' field 'genre' should be list\[str\], found \"comedy\""),
    (load_redial_movies, REDIAL, '"100030": {', '"imdb_id": "tt1632708"', '"imdb": "tt1632708"',
     r"item '100030' has no field 'imdb_id'"),
    (load_opendialkg_movies, OPENDIALKG, '"1": {', '"name": "Rachel Getting Married"', '"title": "x"',
     r"item '1' has no field 'name'"),
    (load_opendialkg_movies, OPENDIALKG, '"0": {', '"year": "2008"', '"year": 2008',
     r"item '0' field 'year' should be a non-empty string, found 2008"),
    (load_opendialkg_movies, OPENDIALKG, '"0": {', '"Hindi Language"', "null",
     r"item '0' field 'language' should be list\[str\], found \[null"),
])
def test_malformed_record_in_a_whole_json_loader_names_file_line_and_column(tmp_path, load, source, record_opener,
                                                                            old, new, message):
    location = record_edited_copy(source, tmp_path / source.name, record_opener, old, new)
    with pytest.raises(DataFormatError, match=rf"{re.escape(source.name)}:{location}: {message}"):
        load(tmp_path / source.name)


def test_duplicate_or_unknown_keys_in_a_whole_json_file_are_refused(tmp_path):
    damaged = tmp_path / REDIAL.name
    record_edited_copy(REDIAL, damaged, '"100030": {', '"100030"', '"100026"')
    with pytest.raises(DataFormatError, match=r"redial_id2info\.json:1:\d+: broken JSON \(Duplicate key '100026'\)"):
        load_redial_movies(damaged)  # json.loads would silently keep one of the two movies
    damaged = tmp_path / ALCE.name
    record_edited_copy(ALCE, damaged, '"eli5": {', '"eli5"', '"nq"')
    with pytest.raises(DataFormatError, match=r"alce_human_eval_utility_completed\.json:\d+:\d+: dataset 'nq' is not"):
        load_alce_utility(damaged)


# --- TREC files of one's own -------------------------------------------------------------------------------------

def test_qrels_round_trip_and_ir_measures_reads_what_is_written(tmp_path):
    import ir_measures

    from lib.data import load_qrels, write_qrels

    grades = pd.DataFrame({"qid": ["q2", "q1", "q1"], "docid": ["d9", "d2", "d10"], "grade": [1, 3, 0]})
    path = write_qrels(grades, tmp_path / "judge.qrels")
    assert path.read_text().splitlines() == ["q1 0 d10 0", "q1 0 d2 3", "q2 0 d9 1"]
    with pytest.warns(data.UncheckedDataWarning):
        loaded = load_qrels(path)
    assert loaded.to_dict("records") == [{"qid": "q1", "docid": "d10", "human_grade": 0},
                                         {"qid": "q1", "docid": "d2", "human_grade": 3},
                                         {"qid": "q2", "docid": "d9", "human_grade": 1}]
    read = sorted((q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(path)))
    assert read == [("q1", "d10", 0), ("q1", "d2", 3), ("q2", "d9", 1)]


def test_a_failed_judgment_is_never_written_as_a_grade(tmp_path):
    from lib.data import write_qrels

    grades = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "grade": pd.array([2, None], dtype="Int64")})
    with pytest.raises(ValueError, match="1 rows have no 'grade'"):
        write_qrels(grades, tmp_path / "judge.qrels")
    assert not (tmp_path / "judge.qrels").exists()


def test_qrels_and_runs_name_the_line_at_fault(tmp_path):
    from lib.data import load_qrels, load_run

    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 high\n")
    with pytest.raises(data.DataFormatError, match=r"bad.qrels:2: grade 'high'"):
        load_qrels(qrels)
    qrels.write_text("q1 0 d1 2\nq1 0 d1 1\n")
    with pytest.raises(data.DataFormatError, match=r"bad.qrels:2"):
        load_qrels(qrels)
    run = tmp_path / "bm25.run"
    run.write_text("q1 Q0 d1 1 12.5 bm25\nq1 Q0 d2 2 11.0 bm25\n")
    with pytest.warns(data.UncheckedDataWarning):
        ranked = load_run(run)
    assert ranked.to_dict("records")[1] == {"qid": "q1", "docid": "d2", "rank": 2, "score": 11.0, "run": "bm25"}
    run.write_text("q1 Q0 d1 first 12.5 bm25\n")
    with pytest.raises(data.DataFormatError, match=r"bm25.run:1: rank 'first'"):
        load_run(run)
