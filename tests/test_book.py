"""The report's book (lib.tools.book): the assembly of each chapter, the committed site, and a real browser."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import plotly.graph_objects as go
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from lib import paths
from lib.tools import book, pipeline

SITE = paths.ROOT / "outputs" / "html"


def executed_chapter() -> nbformat.NotebookNode:
    """An executed-notebook-shaped chapter: heading, parameters (2 defaults, 1 injected), a figure, prose."""
    figure = go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout={"title": {"text": "Grades by query"}})
    notebook = new_notebook(cells=[
        new_markdown_cell("# 03 · A chapter"),
        new_code_cell("n = 2\nlabel = 'a'", metadata={"tags": ["parameters"]}),
        new_code_cell("# Parameters\nn = 5\n", metadata={"tags": ["injected-parameters"]}),
        new_code_cell("show(fig)", outputs=[new_output("display_data", data={
            book.PLOTLY_MIME: figure.to_plotly_json(), "text/html": "<div></div>"})]),
        new_markdown_cell("Some prose."),
        new_code_cell("print(1)"),
    ])
    notebook.metadata["papermill"] = {"default_parameters": {}, "parameters": {"n": 5}}  # as papermill records them
    return notebook


def test_a_chapter_in_the_book_has_code_folded_parameters_listed_and_figures_captioned() -> None:
    notebook = executed_chapter()
    chapter = book.book_chapter(notebook, 3)

    assert [cell.cell_type for cell in chapter.cells] == [
        "markdown", "markdown", "code", "code", "code", "markdown", "markdown", "code"]
    assert all("hide-input" in cell.metadata.tags for cell in chapter.cells if cell.cell_type == "code")
    assert chapter.cells[2].metadata.tags == ["parameters", "hide-input"]
    assert chapter.cells[1].source == (":::{dropdown} Parameters of this run (2)\n| parameter | value |\n|---|---|\n"
                                       "| `n` | `5` |\n| `label` | `\"a\"` |\n:::\n")
    assert chapter.cells[5].source == "**Figure 3.1.** Grades by query"
    assert len({cell.id for cell in chapter.cells}) == len(chapter.cells)
    assert "hide-input" not in notebook.cells[1].metadata.tags  # the executed notebook itself is untouched
    nbformat.validate(chapter)
    briefed = book.book_chapter(notebook, 3, "**In brief.** It sees.")
    assert briefed.cells[1].source == "**In brief.** It sees." and briefed.cells[2:] == chapter.cells[1:]
    nbformat.validate(briefed)


def test_only_the_first_figure_of_a_page_loads_plotly() -> None:
    figure = {book.PLOTLY_MIME: {"data": [], "layout": {"title": {"text": "t"}}}, "text/html": "<div>fig</div>"}
    notebook = new_notebook(cells=[new_code_cell("a", outputs=[new_output("display_data", data=dict(figure))]),
                                   new_code_cell("b", outputs=[new_output("display_data", data=dict(figure))])])
    chapter = book.book_chapter(notebook, 1)
    first, second = (c.outputs[0].data["text/html"] for c in chapter.cells if c.cell_type == "code")
    assert first == f'<script src="_static/{book.PLOTLY_JS}"></script>\n<div>fig</div>' and second == "<div>fig</div>"
    assert "html_js_files" not in book.book_config()["sphinx"]["config"]  # no page loads it by default


def test_missing_values_show_a_dash_and_progress_bars_are_dropped() -> None:
    table = ('<table border="1" class="dataframe"><tr><td>0.42</td><td>NaN</td><td>&lt;NA&gt;</td>'
             '<td>NaNa</td></tr></table>')
    cell = new_code_cell("x", outputs=[
        new_output("stream", name="stderr", text="judge:  50%|█████     | 1/2\njudge: 100%|██████████| 2/2\n"),
        new_output("stream", name="stdout", text="kept line\nlabels: 100%|██████████| 2/2 [00:01]\n"),
        new_output("display_data", data={"text/html": table, "text/plain": "t"})])
    book.tidy_outputs(cell)
    assert [o.output_type for o in cell.outputs] == ["stream", "display_data"]
    assert cell.outputs[0].text == "kept line\n"
    assert cell.outputs[1].data["text/html"].count("<td>—</td>") == 2 and "<td>NaNa</td>" in cell.outputs[1].data[
        "text/html"]


def test_long_decimals_are_shortened_and_an_index_of_row_numbers_is_dropped() -> None:
    assert [book.short_number(x) for x in ("0.006944", "-0.029630", "0.000042", "12.345678", "0.500000")] == [
        "0.00694", "-0.0296", "4.2e-05", "12.35", "0.5"]
    numbered = ('<table class="dataframe"><thead><tr><th></th><th>a</th></tr></thead><tbody>'
                '<tr><th>0</th><td>0.123456</td></tr><tr><th>1</th><td>0.42</td></tr></tbody></table>')
    cell = new_code_cell("x", outputs=[new_output("display_data", data={"text/html": numbered, "text/plain": "t"})])
    book.tidy_outputs(cell)
    assert cell.outputs[0].data["text/html"] == (
        '<table class="dataframe"><thead><tr><th>a</th></tr></thead><tbody>'
        '<tr><td>0.123</td></tr><tr><td>0.42</td></tr></tbody></table>')
    labelled = numbered.replace("<th>0</th>", "<th>ToneEmpathy</th>")  # a row label stays
    assert book.without_row_numbers(labelled) == labelled
    skipping = numbered.replace("<th>1</th>", "<th>2</th>")  # a filtered frame's numbers say which rows
    assert book.without_row_numbers(skipping) == skipping


def test_untitled_figure_and_cell_without_figure() -> None:
    assert book.figure_title(new_code_cell("x")) is None
    cell = new_code_cell("x", outputs=[new_output("display_data", data={book.PLOTLY_MIME: {"data": []}})])
    assert book.figure_title(cell) == ""


def test_the_book_loads_nothing_from_the_network() -> None:
    config = book.book_config()
    assert config["execute"]["execute_notebooks"] == "off"
    assert "dollarmath" not in config["parse"]["myst_enable_extensions"]
    assert "sphinx_thebe" not in config["sphinx"]["config"]["extensions"]


def test_committed_book_has_every_chapter_and_plotly_js_once() -> None:
    chapters = pipeline.notebook_names()
    pages = {path.name for path in SITE.glob("*.html")}
    assert {f"{chapter}.html" for chapter in chapters} | {"index.html", "search.html"} <= pages
    assert (SITE / "_static" / book.PLOTLY_JS).stat().st_size > 1_000_000
    for page in pages:
        text = (SITE / page).read_text(encoding="utf-8")
        assert "Plotly.register" not in text, f"{page} embeds plotly.js"
        assert not re.search(r'(src|href)="https?://[^"]*\.(js|css)', text), f"{page} loads from the network"
        loads = text.count(f'src="_static/{book.PLOTLY_JS}"')
        if "plotly-graph-div" in text:  # plotly.js once, before the first figure's drawing script
            assert loads == 1 and text.index(book.PLOTLY_JS) < text.index("plotly-graph-div"), page
        else:
            assert loads == 0, f"{page} shows no figure but loads plotly.js"
    index = (SITE / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{chapter}.html"' in index for chapter in chapters)
    assert not [path for pattern in book.NOT_SITE for path in SITE.glob(pattern)]


@pytest.fixture(scope="module")
def browser() -> str:
    executable = book.chromium()
    if executable is None:
        pytest.skip("no Chromium: the browser test needs Debian's chromium package (apt install chromium), "
                    "or CHROMIUM naming the executable")
    return executable


def test_every_page_of_the_committed_book_opens_in_a_browser_without_error(browser: str) -> None:
    assert book.browser_problems(SITE, browser) == {}


def test_the_browser_check_finds_a_console_error_a_network_load_and_an_undrawn_figure(browser: str,
                                                                                        tmp_path: Path) -> None:
    (tmp_path / "good.html").write_text("<html><body><p>fine</p></body></html>")
    (tmp_path / "bad.html").write_text(
        '<html><body><script>console.error("broken")</script><img src="http://example.invalid/x.png">'
        f'<img src="{(tmp_path.parent / "outside.png").as_uri()}">'
        '<div class="plotly-graph-div"></div><script>undefinedFunction()</script>'
        '<table><tr><td>NaN</td><td>1</td></tr></table><div style="width: 2000px">wide</div></body></html>')
    problems = book.browser_problems(tmp_path, browser)
    assert list(problems) == ["bad.html"]
    found = "\n".join(problems["bad.html"])
    assert "console error: broken" in found
    assert "uncaught: " in found and "undefinedFunction" in found
    assert "network request: http://example.invalid/x.png" in found
    assert f"network request: {(tmp_path.parent / 'outside.png').as_uri()}" in found
    assert "1 of 1 figures not drawn" in found
    assert "1 table cells show a missing value as NaN" in found and "px wider than the 1280 px window" in found
