"""The prompt loader: UTF-8 files, read once, parts split at '---' lines and counted."""
from __future__ import annotations

import pytest

from lib import prompts


def test_parts_are_split_stripped_and_counted(tmp_path):
    (tmp_path / "ask.txt").write_text("Système — rules\n---\n  Context: {x}\n---\nItem\n", encoding="utf-8")
    prompts.load.cache_clear()
    assert prompts.load("ask", tmp_path).startswith("Système — rules")
    (tmp_path / "ask.txt").write_text("changed", encoding="utf-8")
    assert prompts.load("ask", tmp_path).startswith("Système")  # read once per process


def test_part_count_is_checked():
    assert len(prompts.parts("relevance_pointwise", 3)) == 3
    with pytest.raises(ValueError, match=r"relevance_pointwise: expected 2 parts .* found 3"):
        prompts.parts("relevance_pointwise", 2)


def test_every_template_in_the_folder_loads_and_is_used_by_lib():
    from lib import paths

    stems = sorted(p.stem for p in paths.PROMPTS.glob("*.txt"))
    code = "\n".join(p.read_text(encoding="utf-8") for p in (paths.ROOT / "lib").rglob("*.py"))
    assert "relevance_pointwise" in stems  # the glob found the folder
    assert [stem for stem in stems if f'"{stem}"' not in code] == []  # no template without a reader
    assert all("---" not in part for stem in stems for part in prompts.load(stem).split(prompts.SEPARATOR))
