"""Run the numbered notebooks with papermill into byte-stable executed notebooks, then build the report's book.

``python -m lib.tools.pipeline run 01_nudge_candidates`` executes ``notebooks/01_nudge_candidates.ipynb`` with
the parameters of its section in ``params.yaml`` into a temporary file, and only on success normalises it
(:func:`normalise`) and moves it to ``outputs/notebooks/``. A failed run is kept as ``*.failed.ipynb`` for
inspection, the error names the notebook, the cell and the exception, and no stale target is left. ``run-all``
does every notebook in order, each after its measurements (``MEASUREMENTS``), stops at the first failure, and
then builds the book ``outputs/html/`` (:mod:`lib.tools.book`), whose first page is the front page.

The executed notebooks and the book are committed, so a rerun on unchanged inputs must rewrite the same bytes:
otherwise every ``make all`` shows every file as changed and a real change drowns in the noise.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from lib import paths
from lib.embeddings import study_store
from lib.llm.cache import chapter_run
from lib.paths import shown
from lib.tools import book

PARAMS_FILE = paths.ROOT / "params.yaml"
CELL_TIMEOUT_S = 3600
# Run-dependent metadata: papermill's wall-clock timings and the kernel's message timestamps.
VOLATILE_PAPERMILL_KEYS = ("start_time", "end_time", "duration")
VOLATILE_CELL_METADATA = ("execution",)
# tqdm's timing on a progress bar ("[00:03<00:00, 6.20call/s]"): elapsed time and speed of this run.
PROGRESS_TIMING = re.compile(r" \[[\d:]+<[^\]\n]*\]")


# Measurements a chapter reads but does not make, run before its notebook with the notebook's parameters: the
# table each writes, and the function (module:name) that returns it. Chapter 07's judge drift restarts the
# server to rerun requests on a fresh one, which a notebook's own gateway cannot do mid-run; the chapter's make
# target runs both, and its 20-minute budget counts both (lib.costs.cold_run).
MEASUREMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "07_validity": (("judge_drift", "lib.chapters.ch07:drift_measurement"),),
}


@dataclass(frozen=True)
class Folders:
    """Where the pipeline reads notebooks and parameters and writes its outputs. The defaults are the
    study's own (outputs follow ``STUDY_OUTPUT_DIR``); tests pass temporary folders."""

    notebooks: Path = paths.NOTEBOOKS
    params: Path = PARAMS_FILE
    profile: str | None = None
    executed: Path = paths.EXECUTED_NOTEBOOKS
    html: Path = paths.HTML
    tables: Path = paths.TABLES
    ledgers: Path = paths.LEDGERS


class NotebookFailed(RuntimeError):
    """A cell of a notebook raised; the message names the notebook, the cell and the exception."""


def notebook_names(notebooks: Path = paths.NOTEBOOKS) -> list[str]:
    """Stems of ``NN_*.ipynb`` in ``notebooks``, in numeric order."""
    return sorted(p.stem for p in notebooks.glob("[0-9][0-9]_*.ipynb"))


def profile_file(params_file: Path, profile: str) -> Path:
    """The overlay of ``profile`` beside ``params_file``: ``params.full.yaml`` for ``full``."""
    return params_file.with_name(f"{params_file.stem}.{profile}{params_file.suffix}")


def parameters_for(name: str, params_file: Path = PARAMS_FILE, profile: str | None = None) -> dict:
    """The papermill parameters of notebook ``name``: its section of ``params_file`` (empty if none), with the
    section of the ``profile`` overlay (:func:`profile_file`) on top. An overlay may only change parameters the
    base file sets, so a misspelt name is an error rather than a silently unused value."""
    sections = yaml.safe_load(params_file.read_text()) or {}
    parameters = dict(sections.get(name) or {})
    if profile is not None:
        overlay_path = profile_file(params_file, profile)
        if not overlay_path.exists():
            raise SystemExit(f"error: no profile {profile!r}: {shown(overlay_path)} does not exist")
        overlay_sections = yaml.safe_load(overlay_path.read_text()) or {}
        strays = sorted(set(overlay_sections) - set(sections))
        if strays:
            raise SystemExit(f"error: {shown(overlay_path)} has sections {', '.join(strays)}, which "
                             f"{shown(params_file)} does not")
        overlay = dict(overlay_sections.get(name) or {})
        unknown = sorted(set(overlay) - set(parameters))
        if unknown:
            raise SystemExit(f"error: {shown(overlay_path)} sets {', '.join(unknown)} for {name}, which "
                             f"{shown(params_file)} does not")
        parameters.update(overlay)
    return parameters


def normalise(notebook: nbformat.NotebookNode, name: str, source_ids: set[str], source: Path,
              target: Path) -> None:
    """Make an executed notebook a function of its inputs only, in place.

    * Cell ids: the source notebook's ids are kept (they are committed); any other cell — papermill's
      injected-parameters cell, which it gives a random id — gets one derived from the notebook name and
      the cell index.
    * Papermill's timings and the kernel's execution timestamps are dropped, and so is the timing part of
      progress bars on stderr (the bar and its counts stay).
    * Papermill's input and output paths are shown relative to the repository, and the output path is the
      final target rather than the temporary file papermill wrote.
    """
    for index, cell in enumerate(notebook.cells):
        if "id" in cell and cell.id not in source_ids:
            cell["id"] = hashlib.sha256(f"{name}:{index}".encode()).hexdigest()[:8]
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        for key in VOLATILE_PAPERMILL_KEYS:
            cell.metadata.get("papermill", {}).pop(key, None)
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and output.name == "stderr":
                output.text = PROGRESS_TIMING.sub("", output.text)
    run_metadata = notebook.metadata.get("papermill", {})
    for key in VOLATILE_PAPERMILL_KEYS:
        run_metadata.pop(key, None)
    run_metadata.update(input_path=shown(source), output_path=shown(target))


def source_cell_index(source: Path, failed: Path) -> int:
    """Index in the source notebook of the cell that raised, found by its id in the failed notebook
    (papermill keeps the source's cell ids and flags the raising cell). Papermill's own index counts the
    parameters cell it injected, which the notebook the author edits does not have."""
    raised = next(cell.id for cell in nbformat.read(failed, as_version=4).cells
                  if cell.metadata.get("papermill", {}).get("exception"))
    return [cell.get("id") for cell in nbformat.read(source, as_version=4).cells].index(raised)


def run(name: str, folders: Folders = Folders()) -> Path:
    """Execute notebook ``name`` into ``folders.executed``.

    Raises :class:`NotebookFailed` when a cell raises; the partly executed notebook is then kept as
    ``<name>.failed.ipynb`` and the previous executed notebook of ``name`` is removed, so no output
    of an older run passes for the current one."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = folders.notebooks / f"{name}.ipynb"
    if not source.exists():
        raise SystemExit(f"error: no notebook {shown(source)}")
    target = folders.executed / f"{name}.ipynb"
    partial = target.with_suffix(".partial.ipynb")
    failed = target.with_suffix(".failed.ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in (partial, failed):
        stale.unlink(missing_ok=True)
    try:
        # its kernel's calls are the chapter's (they may add to the committed cache), its texts the study's
        with chapter_run(name), study_store():
            papermill.execute_notebook(
                str(source), str(partial), parameters=parameters_for(name, folders.params, folders.profile),
                kernel_name="python3",
                cwd=str(folders.notebooks), execution_timeout=CELL_TIMEOUT_S, progress_bar=False, log_output=False,
                # nbclient merges each cell's stdout (and stderr) messages into one output and applies "\r":
                # how prints split into kernel messages depends on timing, so unmerged outputs vary by run.
                coalesce_streams=True,
            )
    except BaseException as error:
        target.unlink(missing_ok=True)
        (folders.html / f"{name}.html").unlink(missing_ok=True)  # the book's page of the older run
        if partial.exists():
            os.replace(partial, failed)
        kept = f"the partly executed notebook is {shown(failed)}"
        if isinstance(error, PapermillExecutionError):
            raise NotebookFailed(f"{name} failed in cell {source_cell_index(source, failed)} of {shown(source)} "
                                 f"(0-based; In [{error.exec_count}]): {error.ename}: {error.evalue}\n{kept}"
                                 ) from error
        print(f"error: {name} stopped; {kept}", file=sys.stderr)
        raise
    executed = nbformat.read(partial, as_version=4)
    source_ids = {cell.get("id") for cell in nbformat.read(source, as_version=4).cells}
    normalise(executed, name, source_ids, source, target)
    nbformat.write(executed, partial)
    os.replace(partial, target)
    print(f"{name}: {shown(target)}")
    return target


def measure(name: str, folders: Folders = Folders()) -> list[str]:
    """Run the measurements of notebook ``name`` (``MEASUREMENTS``) with its parameters and write their tables;
    returns the tables' paths (none when the notebook has no measurement)."""
    from lib import tables

    written = []
    for table, target in MEASUREMENTS.get(name, ()):
        module, function = target.split(":")
        parameters = parameters_for(name, folders.params, folders.profile)
        with chapter_run(name), study_store():
            frame = getattr(importlib.import_module(module), function)(parameters)
        written.append(tables.write_table(frame, table))
        print(f"{name}: measured {table} ({written[-1]})")
    return written


def chapter(name: str, folders: Folders = Folders()) -> Path:
    """Run notebook ``name``'s measurements, then the notebook: one chapter, as ``make NN`` does."""
    measure(name, folders)
    return run(name, folders)


def run_all(folders: Folders = Folders()) -> list[Path]:
    """Run every chapter in order (stopping at the first failure), then build the book."""
    executed = [chapter(name, folders) for name in notebook_names(folders.notebooks)]
    write_book(folders)
    return executed


def write_book(folders: Folders = Folders()) -> Path:
    """Build the book into ``folders.html`` from the executed notebooks, tables and ledgers as they are now;
    returns its first page."""
    page = book.build(notebook_names(folders.notebooks), folders.notebooks, folders.executed, folders.tables,
                      folders.ledgers, folders.html)
    print(f"book: {shown(page)}")
    return page


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.tools.pipeline",
                                     description="Outputs go to STUDY_OUTPUT_DIR when it is set.")
    parser.add_argument("--notebooks", type=Path, default=paths.NOTEBOOKS, help="folder of the NN_*.ipynb")
    parser.add_argument("--params", type=Path, default=PARAMS_FILE, help="papermill parameters per notebook")
    parser.add_argument("--profile", default=None,
                        help="sizes overlay params.PROFILE.yaml on top of --params (e.g. full; make's PROFILE)")
    sub = parser.add_subparsers(dest="command", required=True)
    run_cmd = sub.add_parser("run", help="execute one notebook")
    run_cmd.add_argument("name")
    measure_cmd = sub.add_parser("measure", help="run one notebook's measurements (MEASUREMENTS), which run-all "
                                                 "runs before it")
    measure_cmd.add_argument("name")
    chapter_cmd = sub.add_parser("chapter", help="one chapter: its measurements, then its notebook")
    chapter_cmd.add_argument("name")
    sub.add_parser("run-all", help="execute every notebook in order, each after its measurements, then build the "
                                   "book")
    sub.add_parser("book", help="build the book from the current outputs")
    sub.add_parser("list", help="list the notebooks in order")
    args = parser.parse_args(argv)
    folders = Folders(notebooks=args.notebooks, params=args.params, profile=args.profile)
    try:
        if args.command == "run":
            run(args.name, folders)
        elif args.command == "measure":
            measure(args.name, folders)
        elif args.command == "chapter":
            chapter(args.name, folders)
        elif args.command == "run-all":
            run_all(folders)
        elif args.command == "book":
            write_book(folders)
        else:
            print("\n".join(notebook_names(folders.notebooks)))
    except NotebookFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
