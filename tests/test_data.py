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
