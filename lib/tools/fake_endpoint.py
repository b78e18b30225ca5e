"""An instant fake OpenAI-compatible endpoint that answers every request the study makes, for the dry run
(:mod:`lib.tools.dry_run`): a chapter run against it goes through the code paths of a real run, so its wall time
is the chapter's time without LLM latency.

Answers (:func:`answer`) are valid by construction and deterministic: every choice is drawn from a generator
seeded by the request's hash, so a rerun gets the same answers and a retry (another seed in the request) another.

* ``response_format`` requests get an instance of the sent JSON schema (objects, arrays within their item
  bounds, strings within their lengths made of the prompt's own words, integers from their enum or range,
  numbers in their range). Three schemas need more than validity for a chapter to proceed as a real run does:
  a nugget list holds sentences of the texts shown (a nugget stated in no source sentence is dropped), a CRS
  recommendation names candidates shown, and an LLM user turn names the wishes shown.
* Pre-filled requests (``{"grade": ``, ``{"score": ``, ``{"better": "``) get the value that continues the
  prefill, written on every scale that field is asked on (:data:`PREFILLED`), and a reason after it where the
  G-Eval form asks for one.
* Free-text requests (RAG answers, G-Eval steps) get a few sentences of the prompt's words.
* With ``logprobs``, each integer value, each label of a list of labels (and a pre-filled verdict) is its own
  token whose ``top_logprobs`` list the field's alternatives with the written one most likely, so
  probability-weighted scores are read as from a real endpoint and vary between requests.

A request none of these covers (an unknown pre-filled field) is answered with HTTP 400, which stops the chapter
naming the request rather than passing a made-up value for one the study never asked.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, get_args

from lib.design import GRADES
from lib.judges.bias import Verdict
from lib.judges.geval import FORM_HEADINGS
from lib.nuggets import sentences

MODEL = "dry-run-fake"
# Pre-filled field → (values written, values listed in top_logprobs). Written values lie on every scale the field
# is asked on: grades on the study's 0–2 scale (inside the 0–3 TREC scale), scores 1–3 (inside every G-Eval
# rubric's scale: Fluency's is 1–3, the others 1–5); the listed alternatives span the widest scale, and a reader
# keeps the ones on its own scale.
PREFILLED: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {
    "grade": (GRADES, (0, 1, 2, 3)),
    "score": ((1, 2, 3), (1, 2, 3, 4, 5)),
    "better": (get_args(Verdict), get_args(Verdict)),
}
FALLBACK_WORDS = ("plain", "answer", "from", "the", "dry", "run")
_PREFILL_FIELD = re.compile(r'"(\w+)"\s*:\s*("?)$')
_NUMBERED = re.compile(r"^\[\d+\] (.*)$")


class UnanswerableRequest(ValueError):
    """A request the fake has no valid answer for."""


def request_rng(body: dict[str, Any]) -> random.Random:
    """A generator seeded by the request's canonical JSON: the same request, the same answer. The OpenAI ``user``
    field is left out: no server reads it (the gateway sends a drift rerun's replicate label there), so a rerun
    differs from the first run only where a real server's answers would."""
    asked = {key: value for key, value in body.items() if key != "user"}
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def prompt_words(body: dict[str, Any]) -> list[str]:
    """The distinct words of the request's messages, in order: the vocabulary of made-up strings, so that they
    read as on topic and two of them rarely share enough words to be near-duplicates."""
    words = re.findall(r"[A-Za-z]{3,}", " ".join(m["content"] for m in body["messages"]))
    return list(dict.fromkeys(w.lower() for w in words)) or list(FALLBACK_WORDS)


def sentence(words: list[str], rng: random.Random, n_words: int, max_chars: int | None = None) -> str:
    """``n_words`` words drawn from ``words`` as one sentence, cut at a word to ``max_chars``."""
    text = " ".join(rng.choice(words) for _ in range(n_words)).capitalize() + "."
    while max_chars is not None and len(text) > max_chars and " " in text:
        text = text.rsplit(" ", 1)[0].rstrip(".") + "."
    return text[:max_chars] if max_chars is not None else text


def instance(schema: dict[str, Any], defs: dict[str, Any], words: list[str], rng: random.Random) -> Any:
    """A valid instance of the JSON-schema node ``schema`` (``defs``: the root's ``$defs``)."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[1]], defs, words, rng)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return instance(options[0], defs, words, rng)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        return {name: instance(node, defs, words, rng) for name, node in schema.get("properties", {}).items()}
    if kind == "array":
        low = schema.get("minItems", 1)
        return [instance(schema["items"], defs, words, rng)
                for _ in range(rng.randint(low, schema.get("maxItems", low + 3)))]
    if kind == "string":
        text = sentence(words, rng, rng.randint(5, 12), schema.get("maxLength"))
        return text.ljust(schema.get("minLength", 1), ".")
    if kind == "integer":
        return rng.randint(schema.get("minimum", 0), schema.get("maximum", 5))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    raise UnanswerableRequest(f"no fake answer for the JSON-schema node {json.dumps(schema)[:200]}")


def _block(text: str, start: str, end: str) -> list[str]:
    """The ``[i] …`` lines of ``text`` between the line starting ``start`` and the next line starting ``end``."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith(start)), len(lines))
    out = []
    for line in lines[first + 1:]:
        if line.startswith(end):
            break
        if match := _NUMBERED.match(line):
            out.append(match.group(1))
    return out


def nugget_list(body: dict[str, Any], value: dict[str, Any], schema: dict[str, Any], rng: random.Random
                ) -> dict[str, Any]:
    """The current list with up to three sentences of the shown texts added, within the cap: nuggets a source
    states, as a model copying facts writes them."""
    prompt = body["messages"][-1]["content"]
    current = [] if "(empty)" in prompt.split("Current list", 1)[1] else _block(prompt, "Current list", "Return")
    found = [s for text in _block(prompt, "Texts:", "---") for s in sentences(text) if s not in current]
    added = rng.sample(found, min(len(found), rng.randint(1, 3)))
    cap = schema["properties"]["nuggets"].get("maxItems", len(current) + len(added))
    return {**value, "nuggets": (current + added)[:cap]}


def recommendation(body: dict[str, Any], value: dict[str, Any], schema: dict[str, Any], rng: random.Random
                   ) -> dict[str, Any]:
    """One or two of the listed candidates, copied with their year as the prompt asks."""
    listing = body["messages"][-1]["content"].split("Candidates:\n", 1)[1].split("\nUser's wishes:", 1)[0]
    titles = [re.sub(r"^\d+\. ", "", line).rsplit(": ", 1)[0] for line in listing.splitlines() if line.strip()]
    return {**value, "titles": rng.sample(titles, min(len(titles), rng.randint(1, 2)))}


def user_turn(body: dict[str, Any], value: dict[str, Any], schema: dict[str, Any], rng: random.Random
              ) -> dict[str, Any]:
    """One sentence naming every wish shown by its name (the simulator keeps a turn only when it does)."""
    wishes = body["messages"][-1]["content"].split("Wishes: ", 1)[1].splitlines()[0]
    names = [w.rsplit(" (", 1)[0] for w in wishes.split("; ")]
    text = rng.choice(("I would love ", "Maybe something with ", "I am in the mood for ")) + " and ".join(names)
    return {**value, "text": text[:schema["properties"]["text"].get("maxLength", len(text)) - 1] + "."}


# Schema name (prefix) → what the answer needs beyond validity.
SEMANTICS: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, Any], random.Random], dict[str, Any]]] = {
    "NuggetList": nugget_list,
    "LLMRecommendation": recommendation,
    "UserUtterance": user_turn,
}


def token_logprobs(pieces: list[tuple[str, tuple[Any, ...]]], top_n: int, rng: random.Random
                   ) -> list[dict[str, Any]]:
    """OpenAI ``logprobs.content`` for an answer cut into ``pieces`` (text, alternatives): a piece with
    alternatives lists them in ``top_logprobs`` with random probabilities, the written text the most likely."""
    tokens = []
    for text, alternatives in pieces:
        weights = sorted((rng.random() + 1e-3 for _ in alternatives), reverse=True)
        others = [str(a) for a in alternatives if str(a) != text]
        rng.shuffle(others)
        listed = list(zip([text, *others], weights, strict=False)) if alternatives else [(text, 1.0)]
        total = sum(w for _, w in listed)
        top = [{"token": t, "logprob": math.log(w / total)} for t, w in listed][:top_n]
        tokens.append({"token": text, "logprob": top[0]["logprob"], "top_logprobs": top})
    return tokens


def json_pieces(text: str, schema: dict[str, Any]) -> list[tuple[str, tuple[Any, ...]]]:
    """A JSON answer cut so that each top-level integer value, and each label of a top-level list of labels (an
    array whose items have an enum), is its own piece with its enum as alternatives."""
    properties = schema.get("properties", {})
    label_sets = [tuple(p["items"]["enum"]) for p in properties.values() if "enum" in p.get("items", {})]
    labels = {label: options for options in label_sets for label in options}
    # a label value sits between '["' or ', "' and '"'; an integer value after '": '
    value = (rf'(?<=": )(-?\d+)(?=[,}}])|(?:(?<=\[")|(?<=, "))({"|".join(map(re.escape, labels))})(?=")'
             if labels else r'(?<=": )(-?\d+)(?=[,}])')
    pieces: list[tuple[str, tuple[Any, ...]]] = []
    position = 0
    for match in re.finditer(value, text):
        pieces.append((text[position:match.start()], ()))
        if match.group(1) is not None:
            field = _PREFILL_FIELD.search(text[:match.start()])
            pieces.append((match.group(1), tuple(properties.get(field.group(1), {}).get("enum", ())) if field else ()))
        else:
            pieces.append((match.group(2), labels[match.group(2)]))
        position = match.end()
    pieces.append((text[position:], ()))
    return [p for p in pieces if p[0]]


def answer(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]] | None]:
    """The content of the fake's answer to the chat-completion request ``body``, and its logprobs when asked."""
    rng = request_rng(body)
    words = prompt_words(body)
    top_n = int(body.get("top_logprobs") or 0)
    last = body["messages"][-1]
    if last["role"] == "assistant":  # pre-filled: continue the answer after its field
        field = _PREFILL_FIELD.search(last["content"])
        if field is None or field.group(1) not in PREFILLED:
            raise UnanswerableRequest(f"no fake answer continues the prefill {last['content']!r}")
        written, listed = PREFILLED[field.group(1)]
        value = str(rng.choice(written))
        asks_reason = FORM_HEADINGS[True] in body["messages"][-2]["content"]  # a G-Eval form with a reason after
        tail = (f', "reason": "{sentence(words, rng, rng.randint(6, 12))}"}}' if asks_reason
                else '"}' if field.group(2) else "}")
        pieces = [(value, listed), (tail, ())]
    elif "response_format" in body:
        spec = body["response_format"]["json_schema"]
        schema = spec["schema"]
        value_obj = instance(schema, schema.get("$defs", {}), words, rng)
        semantic = next((f for prefix, f in SEMANTICS.items() if spec["name"].startswith(prefix)), None)
        if semantic is not None:
            value_obj = semantic(body, value_obj, schema, rng)
        pieces = json_pieces(json.dumps(value_obj), schema)
    else:
        pieces = [(" ".join(sentence(words, rng, rng.randint(8, 16)) for _ in range(rng.randint(2, 4))), ())]
    content = "".join(text for text, _ in pieces)
    return content, token_logprobs(pieces, top_n, rng) if body.get("logprobs") else None


def completion(body: dict[str, Any], n: int) -> dict[str, Any]:
    """The chat completion answering ``body`` (the n-th request), with token counts estimated at 4 characters a
    token (what the ledgers sum; a fake's tokens are no model's)."""
    content, logprobs = answer(body)
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    prompt_tokens = sum(len(m["content"]) for m in body["messages"]) // 4 + 1
    completion_tokens = len(content) // 4 + 1
    return {"id": f"dry-run-{n}", "object": "chat.completion", "created": 0, "model": MODEL, "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class FakeEndpoint:
    """:func:`completion` served over real HTTP on 127.0.0.1 (HTTP/1.1 keep-alive, as real endpoints), counting
    the requests it receives (``requests``); a context manager that serves from a background thread."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two sends; without TCP_NODELAY the body waits ~40 ms for a delayed ACK,
            # which would count as the chapters' own time in the record
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # one line per request would drown the driver's table
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # the gateway's liveness probe
                self._send(200, {"object": "list", "data": [{"id": MODEL}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    n = fake.requests
                    fake.requests += 1
                try:
                    self._send(200, completion(body, n))
                except UnanswerableRequest as error:
                    self._send(400, {"error": {"message": f"dry-run fake: {error}", "code": 400}})

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # a chapter's concurrent connections never wait for the backlog

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
