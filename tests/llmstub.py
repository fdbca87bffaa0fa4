"""A local stand-in for the LLM back ends: an HTTP server on 127.0.0.1 that speaks each API's wire
format (Anthropic's and OpenAI's server-sent events, Azure's deployment paths, Ollama's NDJSON),
errors included, and records what it was sent. Used by tests/integration/test_ask.py and benchmarks/bench_ask.py.

The model name picks the behaviour: ``missing`` answers 404, ``busy`` 429, ``slow`` sleeps
longer than any test's timeout, ``broken`` 500, ``endless`` streams text until the client hangs up
(or ``ENDLESS_CAP`` pieces, so that the stub always stops by itself); an API key ``bad-key`` gets 401."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = [
    "The uploader ",
    "retries failed uploads ",
    "three times with backoff [1]",
    ", as the design ",
    "notes say [2][9].",
]
ENDLESS_CAP = 200_000


def _pieces(model: str) -> Iterator[str]:
    if model != "endless":
        yield from ANSWER
        return
    for n in range(ENDLESS_CAP):
        yield ANSWER[n % len(ANSWER)]


class _Handler(BaseHTTPRequestHandler):
    server: StubServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("retry-after-ms", "1")
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, content_type: str, chunks: Iterable[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(chunk.encode())
                self.wfile.flush()
                time.sleep(self.server.delay)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests.append(
            {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        )
        key = (
            self.headers.get("x-api-key")
            or self.headers.get("api-key")
            or (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        )
        path = self.path.split("?")[0]
        if path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith("/chat/completions"):
            api = "openai"
        elif path == "/api/chat":
            api = "ollama"
        else:
            return self._json(404, {"error": "no such route"})
        model = body.get("model") or path.split("/deployments/")[-1].split("/")[0]
        if "/deployments/" in path:
            model = path.split("/deployments/")[1].split("/")[0]
        if model == "slow":
            time.sleep(5)
        failure = {"missing": 404, "busy": 429, "broken": 500}.get(model) or (401 if key == "bad-key" else None)
        if failure:
            message = {
                401: "invalid api key",
                404: f"model '{model}' not found",
                429: "rate limited",
                500: "internal error",
            }[failure]
            if api == "anthropic":
                kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error"}[
                    failure
                ]
                return self._json(failure, {"type": "error", "error": {"type": kind, "message": message}})
            if api == "openai":
                return self._json(
                    failure, {"error": {"message": message, "type": "invalid_request_error", "code": None}}
                )
            return self._json(failure, {"error": message})
        if api == "anthropic":
            return self._stream("text/event-stream", self._anthropic(model))
        if api == "openai":
            return self._stream("text/event-stream", self._openai(model))
        return self._stream("application/x-ndjson", self._ollama(model))

    def _anthropic(self, model: str) -> Iterator[str]:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        yield event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stub",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 321, "output_tokens": 1},
                },
            },
        )
        yield event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        for text in _pieces(model):
            yield event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            )
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 27},
            },
        )
        yield event("message_stop", {"type": "message_stop"})

    def _openai(self, model: str) -> Iterator[str]:
        def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, int] | None = None) -> str:
            body: dict[str, Any] = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
            }
            if usage:
                body["usage"] = usage
            return f"data: {json.dumps(body)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        for text in _pieces(model):
            yield chunk({"content": text})
        yield chunk({}, finish="stop")
        yield chunk(None, usage={"prompt_tokens": 321, "completion_tokens": 27, "total_tokens": 348})
        yield "data: [DONE]\n\n"

    def _ollama(self, model: str) -> Iterator[str]:
        for text in _pieces(model):
            yield (
                json.dumps(
                    {
                        "model": model,
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": text},
                        "done": False,
                    }
                )
                + "\n"
            )
        yield (
            json.dumps(
                {
                    "model": model,
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": 321,
                    "eval_count": 27,
                }
            )
            + "\n"
        )


class StubServer(ThreadingHTTPServer):
    """``with StubServer() as s: s.url`` -> ``http://127.0.0.1:PORT``."""

    daemon_threads = True

    def __init__(self, delay: float = 0.002) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that hung up: not news
        pass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
