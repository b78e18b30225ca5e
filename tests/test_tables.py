"""Tables between notebooks: written only with their documented schema, in schema order."""
from __future__ import annotations

import pandas as pd
import pytest

from lib import paths, tables


@pytest.fixture
def table_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "TABLES", tmp_path / "tables")
    return tmp_path / "tables"


def labels_repeat_frame():
    return pd.DataFrame({"failed": [False], "candidate_id": ["e/c0"], "grade": pd.array([2], dtype="Int64"),
                         "expected_grade": [1.7], "rounded_expected": pd.array([2], dtype="Int64"),
                         "label": pd.array([2], dtype="Int64")})


def test_write_table_refuses_a_missing_or_extra_column(table_dir):
    frame = labels_repeat_frame()
    with pytest.raises(ValueError, match=r"table labels_repeat: columns .* differ from schema"):
        tables.write_table(frame.drop(columns="failed"), "labels_repeat")
    with pytest.raises(ValueError, match="differ from schema"):
        tables.write_table(frame.assign(extra=1), "labels_repeat")
    assert not table_dir.exists() or not any(table_dir.iterdir())


def test_write_table_orders_columns_by_schema_and_round_trips(table_dir):
    frame = labels_repeat_frame()
    written = tables.write_table(frame, "labels_repeat")
    assert written.endswith("labels_repeat.parquet") and (table_dir / "labels_repeat.parquet").exists()
    back = tables.read_table("labels_repeat")
    assert list(back.columns) == list(tables.SCHEMAS["labels_repeat"])
    pd.testing.assert_frame_equal(back, frame[list(tables.SCHEMAS["labels_repeat"])])
