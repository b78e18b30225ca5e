"""Data loaders: the real files load; a malformed row raises an error naming file and line."""
from __future__ import annotations

import pytest

from lib.data import ED_EMOTIONS, DataFormatError, load_journal_entries


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
])
def test_malformed_row_names_file_and_line(tmp_path, content, line, message):
    path = tmp_path / "entries.csv"
    path.write_text(content)
    with pytest.raises(DataFormatError, match=rf"entries\.csv:{line}: .*{message}"):
        load_journal_entries("test", path=path)


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        load_journal_entries("train")


def test_noveleval_loads_with_documented_counts():
    from lib.data import load_noveleval

    table = load_noveleval()
    assert len(table) == 420 and table.qid.nunique() == 21
    assert table.human_grade.value_counts().to_dict() == {0: 290, 2: 90, 1: 40}  # SOURCE.md counts


@pytest.mark.parametrize("qrels, message", [
    ("0 Q0 0-0 0\n0 Q0 0-1\n", r"qrels\.txt:2: expected 4 fields"),
    ("0 Q0 0-0 0\n\n0 Q0 9-9 1\n", r"qrels\.txt:3: unknown query '0' or passage '9-9'"),
    ("0 Q0 0-0 3\n", r"qrels\.txt:1: grade '3'"),
])
def test_noveleval_malformed_qrels_line(tmp_path, qrels, message):
    from lib.data import load_noveleval

    (tmp_path / "queries.tsv").write_text("0\tA question?\n")
    (tmp_path / "corpus.tsv").write_text("0-0\tA passage.\n0-1\tAnother.\n")
    (tmp_path / "qrels.txt").write_text(qrels)
    with pytest.raises(DataFormatError, match=message):
        load_noveleval(tmp_path)


def test_summeval_loads_and_names_a_bad_record(tmp_path):
    from lib.data import load_summeval

    table = load_summeval()
    assert len(table) == 1600 and table.doc_id.nunique() == 100 and table.system_id.nunique() == 16
    assert table.coherence.between(1, 5).all()
    bad = tmp_path / "s.json"
    bad.write_text('[{"doc_id": "d", "system_id": "M0", "source": "s", "system_output": "o", "scores": {"coherence": 2}}]')
    with pytest.raises(DataFormatError, match=r"s\.json: record 0 \(KeyError"):
        load_summeval(bad)
