"""The report as an offline book: the executed notebooks and the front page built by Jupyter Book 1.x.

:func:`build` (``python -m lib.tools.pipeline book``; ``make all`` runs it after the notebooks) assembles a
book source in a temporary folder and builds it with Jupyter Book into ``outputs/html/``: a chapter sidebar,
in-page contents, search and previous/next links, all from local files. Jupyter Book 1.x is Sphinx with
MyST-NB, pip-installable with every asset in its wheels; Quarto's PyPI package downloads its binary when
installed, and Jupyter Book 2 builds with the Node ``mystmd`` tool, which fetches its theme at build time —
neither can build on a machine without network.

What the assembly adds to the committed executed notebooks (the notebooks in ``outputs/notebooks/`` stay as they
are; only the book's copies change):

* **Code folded**: every code cell gets the ``hide-input`` tag (a "show code" toggle), so a chapter reads as
  its prose, tables and figures. The parameters cell and papermill's injected-parameters cell are folded the
  same way and **listed** above them in a closed drop-down: each parameter with the value this run used.
* **Figure captions**: a plotly figure is followed by a caption, "Figure C.k", numbered per chapter, with the
  figure's own title — nothing typed by hand.
* **plotly.js once, where a figure is**: the figures' HTML carries no plotly.js (:func:`lib.plots.show`); the book
  ships one copy from the installed plotly package as a static file, loaded by the pages that show a figure
  (:func:`load_plotly`), before their first one.
* **In brief**: after each chapter's title, its headline, its verdicts counted by outcome and its confirmatory
  verdicts, from the ``verdicts`` table (:func:`lib.tools.front_page.in_brief`).
* **The front page** (:mod:`lib.tools.front_page`) is the book's first page, with each chapter's primary verdict,
  the seed systems against their verdicts and every verdict of the study.

Byte-stable: the source is rebuilt from scratch each time (no incremental state), the build runs in a fresh
folder, and only the HTML site is kept (no pickled doctrees, no ``_sources`` copies of the notebooks, no
``.buildinfo``), so a rebuild from the same notebooks and tables writes the same bytes.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
import yaml

from lib.tools import front_page

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PLOTLY_JS = "plotly.min.js"
STUDY_CSS = "study.css"
# a table wider than the text column scrolls inside itself instead of widening the page
# (and the front page's seed-system matrix gives its lead verdict the room it needs)
CSS = (".cell_output table.dataframe { display: block; overflow-x: auto; max-width: 100%; }\n"
       "#what-the-study-found table td:last-child { min-width: 17em; }\n")
MISSING_CELL = re.compile(r"<td>(?:NaN|nan|&lt;NA&gt;|None|NaT)</td>")
PROGRESS_LINE = re.compile(r"^.*\d+%\|.*\|.*$\n?", re.MULTILINE)  # a tqdm progress bar's line
LONG_DECIMAL = re.compile(r"<td>(-?\d+\.\d{4,})</td>")  # pandas' 6 decimals, more than a reader can use
ROW_NUMBER = re.compile(r"(<tr>\s*)<th>(\d+)</th>")
PARAMETER_TAGS = ("parameters", "injected-parameters")
# Built files the offline site does not need: Sphinx's state for incremental builds and its config hash, copies of
# the sources, the theme's source maps (for its developers' tools) and Sphinx's translations of its scripts into
# other languages (the book is in English). 3.4 + 0.7 of the 14 MB the site would otherwise weigh.
NOT_SITE = (".buildinfo", ".doctrees", "_sources", "objects.inv", ".nojekyll", "_static/locales", "**/*.map")


def book_config() -> dict[str, Any]:
    """Jupyter Book's ``_config.yml``: nothing executed (the notebooks are executed by the pipeline), nothing
    loaded from the network (no launch buttons, no repository links, no analytics, no MathJax: the chapters
    have no mathematics, and MyST's dollar maths is off so a price never becomes one)."""
    return {
        "title": front_page.TITLE,
        "author": "the study's authors",
        "copyright": "",  # Sphinx would otherwise stamp the build year into every page
        "only_build_toc_files": True,
        "execute": {"execute_notebooks": "off"},
        "parse": {"myst_enable_extensions": ["colon_fence"]},
        "html": {"use_multitoc_numbering": False, "home_page_in_navbar": True},
        "launch_buttons": {"notebook_interface": "jupyterlab", "thebe": False},
        "repository": {"url": ""},
        "sphinx": {"config": {
            # Jupyter Book's extensions without sphinx-thebe and sphinx-comments: both only serve online
            # features, and thebe's inline configuration script is declared twice per page (a console error).
            "extensions": ["sphinx_togglebutton", "sphinx_copybutton", "myst_nb", "jupyter_book",
                           "sphinx_external_toc", "sphinx_design", "sphinx_book_theme"],
            "html_copy_source": False,
            "html_show_sourcelink": False,
            "html_last_updated_fmt": None,
            "html_static_path": ["_static"],
            "html_css_files": [STUDY_CSS],
            "nb_merge_streams": True,
            "suppress_warnings": ["mystnb.unknown_mime_type"],
            "html_theme_options": {"use_download_button": False, "use_fullscreen_button": True,
                                   "show_navbar_depth": 1},
            "html_context": {"default_mode": "light"},
        }},
    }


def book_toc(chapters: list[str]) -> dict[str, Any]:
    """``_toc.yml``: the front page first, then the chapters in order."""
    return {"format": "jb-book", "root": "index", "chapters": [{"file": chapter} for chapter in chapters]}


def notebook_defaults(notebook: nbformat.NotebookNode) -> dict[str, Any]:
    """The literal values the ``parameters`` cell assigns (papermill records no defaults of its own)."""
    values: dict[str, Any] = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            for statement in ast.parse(cell.source).body:
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(
                        statement.targets[0], ast.Name):
                    values[statement.targets[0].id] = ast.literal_eval(statement.value)
    return values


def parameters_listing(notebook: nbformat.NotebookNode) -> str:
    """A closed drop-down listing each parameter with the value this run used: the notebook's default
    (:func:`notebook_defaults`) unless papermill injected another."""
    values = {**notebook_defaults(notebook), **notebook.metadata.get("papermill", {}).get("parameters", {})}
    rows = "\n".join(f"| `{name}` | `{json.dumps(value, ensure_ascii=False)}` |" for name, value in values.items())
    return (f":::{{dropdown}} Parameters of this run ({len(values)})\n"
            f"| parameter | value |\n|---|---|\n{rows}\n:::\n")


def figure_title(cell: nbformat.NotebookNode) -> str | None:
    """The title of the plotly figure a code cell shows ("" for an untitled figure), None when it shows none."""
    for output in cell.get("outputs", []):
        figure = output.get("data", {}).get(PLOTLY_MIME)
        if figure is not None:
            title = figure.get("layout", {}).get("title", {})
            return str(title.get("text", "") if isinstance(title, dict) else title)
    return None


def load_plotly(cell: nbformat.NotebookNode) -> None:
    """Put the loading of the book's plotly.js before the first figure of a page, in that figure's HTML: it loads
    synchronously before the figure's own script draws it, and a page without figures never loads its 4.8 MB."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if PLOTLY_MIME in data and "text/html" in data:
            data["text/html"] = f'<script src="_static/{PLOTLY_JS}"></script>\n' + "".join(data["text/html"])
            return


def short_number(text: str) -> str:
    """A table's number as the book shows it: 2 decimals from 1 up, 3 significant digits below (0.00694, -0.0296;
    4.2e-05 for what is smaller still)."""
    value = float(text)
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def without_row_numbers(html: str) -> str:
    """A pandas table without its index column when the index is only row numbers (0, 1, 2, … under an empty
    header): the first column is then the row label the reader needs. A named or labelled index is kept."""
    head, _, body = html.partition("<tbody>")
    numbers = [int(n) for _, n in ROW_NUMBER.findall(body)]
    if (head.count("<tr") != 1 or "<th></th>" not in head or not numbers
            or numbers != list(range(len(numbers))) or body.count("<tr") != len(numbers)):
        return html
    return head.replace("<th></th>", "", 1) + "<tbody>" + ROW_NUMBER.sub(r"\1", body)


def tidy_outputs(cell: nbformat.NotebookNode) -> None:
    """What a reader of the book does not need from a code cell's outputs: a table cell for a missing value shows
    "—" (the table's note or the prose says why it is missing), long decimals are shortened (:func:`short_number`),
    an index of row numbers is dropped (:func:`without_row_numbers`), and progress bars are dropped (an output left
    empty goes with them)."""
    kept = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            output["text"] = PROGRESS_LINE.sub("", "".join(output["text"]))
            if not output["text"].strip():
                continue
        html = output.get("data", {}).get("text/html")
        if html is not None and 'class="dataframe"' in "".join(html):
            table = MISSING_CELL.sub("<td>—</td>", "".join(html))
            table = LONG_DECIMAL.sub(lambda m: f"<td>{short_number(m.group(1))}</td>", table)
            output["data"]["text/html"] = without_row_numbers(table)
        kept.append(output)
    cell["outputs"] = kept


def book_chapter(notebook: nbformat.NotebookNode, number: int, brief: str | None = None) -> nbformat.NotebookNode:
    """The book's copy of an executed notebook: code folded, parameters listed, figures captioned (see the
    module docstring), and ``brief`` (the chapter's "in brief", :func:`lib.tools.front_page.in_brief`) after its
    title cell. ``number`` is the chapter's number, which figure captions carry."""
    chapter = nbformat.from_dict(json.loads(json.dumps(notebook)))  # a deep copy
    cells, figures = [], 0
    for index, cell in enumerate(chapter.cells):
        if index == 1 and brief is not None:
            cells.append(nbformat.v4.new_markdown_cell(brief, id=f"{chapter.cells[0].id}-brief"))
        if cell.cell_type == "code":
            tags = list(cell.metadata.get("tags", []))
            if "parameters" in tags:
                cells.append(nbformat.v4.new_markdown_cell(parameters_listing(notebook), id=f"{cell.id}-list"))
            cell.metadata["tags"] = [*tags, "hide-input"]
            tidy_outputs(cell)
            cells.append(cell)
            title = figure_title(cell)
            if title is not None:
                if figures == 0:
                    load_plotly(cell)
                figures += 1
                caption = f"**Figure {number}.{figures}.** {front_page.markdown_text(title)}".rstrip()
                cells.append(nbformat.v4.new_markdown_cell(caption, id=f"{cell.id}-caption"))
        else:
            cells.append(cell)
    chapter.cells = cells
    return chapter


def assemble(chapters: list[str], notebooks: Path, executed: Path, tables: Path, ledgers: Path, source: Path) -> None:
    """Write the book's source into the empty folder ``source``: config, contents, front page, the executed
    chapters and plotly.js. A chapter without an executed notebook is listed on the front page (titled from its
    notebook in ``notebooks``) but not in the book."""
    import plotly.offline

    built = [chapter for chapter in chapters if (executed / f"{chapter}.ipynb").exists()]
    (source / "_config.yml").write_text(yaml.safe_dump(book_config(), sort_keys=False, allow_unicode=True))
    (source / "_toc.yml").write_text(yaml.safe_dump(book_toc(built), sort_keys=False))
    (source / "index.md").write_text(front_page.render(chapters, notebooks, set(built), tables, ledgers),
                                     encoding="utf-8")
    for chapter in built:
        notebook = nbformat.read(executed / f"{chapter}.ipynb", as_version=4)
        nbformat.write(book_chapter(notebook, int(chapter[:2]), front_page.in_brief(chapter, tables)),
                       source / f"{chapter}.ipynb")
    static = source / "_static"
    static.mkdir()
    (static / PLOTLY_JS).write_text(plotly.offline.get_plotlyjs(), encoding="utf-8")
    (static / STUDY_CSS).write_text(CSS, encoding="utf-8")


def build(chapters: list[str], notebooks: Path, executed: Path, tables: Path, ledgers: Path, site: Path) -> Path:
    """Assemble and build the book, then replace ``site`` with the built HTML; returns its first page.
    Sphinx's warnings are printed; a failed build raises and leaves ``site`` as it was."""
    with tempfile.TemporaryDirectory(prefix="book-") as tmp:
        source = Path(tmp) / "book"
        source.mkdir()
        assemble(chapters, notebooks, executed, tables, ledgers, source)
        command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(source), "--quiet",
                   "--path-output", str(Path(tmp) / "out")]
        # a fixed hash seed: Sphinx and its extensions iterate over sets in places, whose order follows string hashes
        result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if result.returncode != 0:
            raise RuntimeError(f"the book did not build:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        html = Path(tmp) / "out" / "_build" / "html"
        for pattern in NOT_SITE:
            for target in html.glob(pattern):
                shutil.rmtree(target) if target.is_dir() else target.unlink()
        if site.exists():
            shutil.rmtree(site)
        shutil.copytree(html, site)
    return site / "index.html"


VIEWPORT: Any = {"width": 1280, "height": 800}  # Playwright's ViewportSize


def chromium() -> str | None:
    """The Chromium executable (``CHROMIUM`` or Debian's ``chromium`` on the PATH), None when there is none."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _watched(page: Any, site: Path) -> list[str]:
    """The list into which ``page`` reports its console errors and warnings, uncaught exceptions, failed loads and
    requests for anything outside the folder ``site`` (kept as they happen)."""
    inside = site.resolve().as_uri() + "/"
    found: list[str] = []

    def console(message: Any) -> None:
        if message.type in ("error", "warning"):
            found.append(f"console {message.type}: {message.text}")

    def request(sent: Any) -> None:
        if not sent.url.startswith((inside, "data:", "blob:")):
            found.append(f"network request: {sent.url}")

    page.on("console", console)
    page.on("pageerror", lambda error: found.append(f"uncaught: {error}"))
    page.on("requestfailed", lambda failed: found.append(f"failed load: {failed.url}"))
    page.on("request", request)
    return found


def browser_problems(site: Path, executable: str) -> dict[str, list[str]]:
    """Open every page of the built ``site`` in headless Chromium (Playwright driving the given executable) and
    return, per page, what went wrong: console errors and warnings, uncaught exceptions, failed loads, any
    request that leaves the site's folder, each plotly figure that drew nothing (no ``main-svg``), table cells
    that show a missing value as NaN, and a page wider than a 1280 × 800 window. A page without problems is left
    out, so a sound book gives ``{}``."""
    from playwright.sync_api import sync_playwright

    problems: dict[str, list[str]] = {}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            for path in sorted(site.glob("*.html")):
                page = browser.new_page(viewport=VIEWPORT)
                found = _watched(page, site)
                page.goto(path.as_uri(), wait_until="load")
                figures, drawn, missing, overflow = page.evaluate("""() => {
                    const figures = [...document.querySelectorAll('.plotly-graph-div')];
                    const cells = [...document.querySelectorAll('td')].map(td => td.textContent.trim());
                    return [figures.length, figures.filter(f => f.querySelector('.main-svg')).length,
                            cells.filter(t => ['NaN', 'nan', '<NA>', 'None', 'NaT'].includes(t)).length,
                            document.documentElement.scrollWidth - window.innerWidth];
                }""")
                if drawn < figures:
                    found.append(f"{figures - drawn} of {figures} figures not drawn")
                if missing:
                    found.append(f"{missing} table cells show a missing value as NaN")
                if overflow > 1:
                    found.append(f"the page is {overflow} px wider than the {VIEWPORT['width']} px window")
                if found:
                    problems[path.name] = found
                page.close()
        finally:
            browser.close()
    return problems
