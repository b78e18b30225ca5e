"""Run the numbered notebooks with papermill and render them to offline HTML (used by the Makefile).

``python -m lib.tools.pipeline run 01_nudge_candidates`` executes ``notebooks/01_nudge_candidates.ipynb`` with the
parameters of its section in ``params.yaml`` into a temporary file, and only on success moves it to
``outputs/notebooks/`` and renders ``outputs/html/``; a failed run is kept as ``*.failed.ipynb`` for
inspection and leaves no stale target. ``run-all`` does every notebook in order.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from lib import paths

PARAMS_FILE = paths.ROOT / "params.yaml"
CELL_TIMEOUT_S = 3600


def notebook_names() -> list[str]:
    """Stems of ``notebooks/NN_*.ipynb`` in numeric order."""
    return sorted(p.stem for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def parameters_for(name: str) -> dict:
    sections = yaml.safe_load(PARAMS_FILE.read_text()) or {}
    return dict(sections.get(name) or {})


HTML_TEMPLATES = Path(__file__).resolve().parent.parent / "html_template"


def render_html(notebook: Path, dest: Path) -> None:
    """Offline HTML: the ``offline`` template drops the lab template's CDN scripts, and plotly.js is
    embedded in the figure outputs, so the page loads nothing from the network."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="offline", extra_template_basedirs=[str(HTML_TEMPLATES)])
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(body, encoding="utf-8")


def run(name: str) -> Path:
    import papermill

    source = paths.NOTEBOOKS / f"{name}.ipynb"
    if not source.exists():
        raise SystemExit(f"error: no notebook {source}")
    target = paths.EXECUTED_NOTEBOOKS / f"{name}.ipynb"
    partial = target.with_suffix(".partial.ipynb")
    failed = target.with_suffix(".failed.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in (partial, failed):
        stale.unlink(missing_ok=True)
    try:
        papermill.execute_notebook(
            str(source), str(partial), parameters=parameters_for(name), kernel_name="python3",
            cwd=str(paths.NOTEBOOKS), execution_timeout=CELL_TIMEOUT_S, progress_bar=False, log_output=False,
        )
    except BaseException:
        target.unlink(missing_ok=True)
        if partial.exists():
            os.replace(partial, failed)
        print(f"error: {name} failed; the partly executed notebook is {failed}", file=sys.stderr)
        raise
    os.replace(partial, target)
    render_html(target, paths.HTML / f"{name}.html")
    print(f"{name}: {target.relative_to(paths.ROOT)} and outputs/html/{name}.html")
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.pipeline")
    sub = parser.add_subparsers(dest="command", required=True)
    run_cmd = sub.add_parser("run", help="execute one notebook")
    run_cmd.add_argument("name")
    sub.add_parser("run-all", help="execute every notebook in order")
    sub.add_parser("list", help="list the notebooks in order")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.name)
    elif args.command == "run-all":
        for name in notebook_names():
            run(name)
    else:
        print("\n".join(notebook_names()))


if __name__ == "__main__":
    main()
