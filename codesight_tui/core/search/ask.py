"""``ask``: an answer to a question about the repository, from an LLM, citing the hits it read.

The pipeline is search (the same ranking as ``search``), a prompt of numbered sources with their
locations, one streamed call to the configured back end, and an ``Answer`` whose ``[n]`` marks map
back to the sources. Back ends, through their official clients: Anthropic (Messages API), OpenAI
(Chat Completions), Azure OpenAI and Ollama. Nothing opens a connection until a back end is
configured (``CODESIGHT_LLM_BACKEND``), and a key is never logged, stored or shown.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.search.contract import Lack, SearchResponse

if TYPE_CHECKING:
    from codesight_tui.core.config import Settings
    from codesight_tui.core.search.contract import Searcher, SearchRequest, SearchResult

BACKENDS = ("anthropic", "openai", "azure", "ollama")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o-mini", "ollama": "llama3.2"}
KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}
AZURE_API_VERSION = "2024-10-21"
OLLAMA_HOST = "http://127.0.0.1:11434"
MAX_SOURCE_CHARS = 3_000  # of one hit's text in the prompt
MAX_CONTEXT_CHARS = 24_000  # of all of them: about 6,000 tokens
MAX_ANSWER_TOKENS = 1_024
# What a back end that ignores MAX_ANSWER_TOKENS (or never ends its stream) may send: an answer is
# cut here, and after LLMConfig.max_seconds in all, with a note saying so.
MAX_ANSWER_CHARS = 32_000

SYSTEM_PROMPT = (
    "You answer questions about a software project using only the numbered sources given: code, "
    "documentation and documents from the project. Cite the sources each statement rests on as [n] "
    "(several as [1][3]). If the sources do not answer the question, say so plainly instead of guessing. "
    "Be concise; quote code only where it helps."
)

_CITE = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")


class AskError(CodeSightError):
    """An ``ask`` that could not be answered, in one line (never with a key in it)."""


@dataclass
class Answer:
    """An LLM's answer. ``sources`` are the hits it was given, numbered from 1 as the text cites
    them; ``citations`` are the numbers the text actually cites."""

    question: str
    text: str
    sources: list[SearchResult] = field(default_factory=list)
    model: str = ""
    backend: str = ""
    usage: dict[str, int] | None = None  # {"input_tokens", "output_tokens"} where the back end reports them
    seconds: float = 0.0
    search_seconds: float = 0.0
    first_token_seconds: float | None = None  # from the call to the back end to the first text
    cut: str | None = None  # why the answer was cut short (too long, too slow), else None

    @property
    def citations(self) -> list[int]:
        return cited(self.text, len(self.sources))

    def source_label(self, n: int) -> str:
        return source_label(self.sources[n - 1])

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.text,
            "model": self.model,
            "backend": self.backend,
            "usage": self.usage,
            "citations": self.citations,
            "seconds": round(self.seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
            "cut": self.cut,
            "first_token_seconds": None if self.first_token_seconds is None else round(self.first_token_seconds, 3),
            "sources": [
                {
                    "n": n,
                    "label": source_label(h),
                    "path": h.path,
                    "start_line": h.start_line,
                    "end_line": h.end_line,
                    "line": h.line or h.start_line,
                    "page": h.page,
                    "slide": h.slide,
                    "scope": h.scope,
                    "repo": h.repo or None,
                    "cited": n in self.citations,
                }
                for n, h in enumerate(self.sources, start=1)
            ],
        }


def cited(text: str, n_sources: int) -> list[int]:
    """The source numbers ``text`` cites (``[2]``, ``[1, 3]``), in order of first mention, each
    within ``1..n_sources``."""
    out: list[int] = []
    for m in _CITE.finditer(text):
        for part in m.group(1).split(","):
            n = int(part)
            if 1 <= n <= n_sources and n not in out:
                out.append(n)
    return out


def source_label(hit: SearchResult) -> str:
    """``src/app.py:10-42``, ``spec.pdf p.12``, ``deck.pptx slide 4``."""
    if hit.page is not None or hit.slide is not None:
        return str(hit.location)
    return f"{hit.path}:{hit.start_line}-{hit.end_line}"


def build_prompt(question: str, hits: Iterable[SearchResult]) -> str:
    """The user message: the question, then each hit numbered with its location and text."""
    parts = [f"Question: {question.strip()}", "", "Sources:"]
    used = 0
    for n, h in enumerate(hits, start=1):
        body = h.content if len(h.content) <= MAX_SOURCE_CHARS else h.content[:MAX_SOURCE_CHARS] + "\n…"
        if used + len(body) > MAX_CONTEXT_CHARS and n > 1:
            break
        used += len(body)
        where = source_label(h) + (f" ({h.scope})" if h.scope and not h.is_document else "")
        parts += [f"[{n}] {where}", f"```{h.language if not h.is_document else 'text'}", body, "```", ""]
    parts.append("Answer the question from these sources, citing them as [n].")
    return "\n".join(parts)


@dataclass
class LLMConfig:
    backend: str
    model: str
    api_key: str | None = None
    base_url: str | None = None
    api_version: str | None = None
    timeout: float = 60.0  # for each read from the back end
    max_seconds: float = 300.0  # for the whole answer

    def __repr__(self) -> str:  # never print a key
        return f"LLMConfig(backend={self.backend!r}, model={self.model!r}, base_url={self.base_url!r})"


def llm_config(settings: Settings, environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The back end from the settings (``CODESIGHT_LLM_*`` or the config file) and each
    ecosystem's own variables. Raises ``AskError`` when none is configured."""
    env = os.environ if environ is None else environ
    backend = (settings.llm_backend or "").strip().lower()
    if not backend:
        found = [v for v in (*KEY_VARIABLES.values(), "OLLAMA_HOST") if env.get(v)]
        hint = f" ({', '.join(found)} is set)" if found else ""
        raise AskError(
            f"no LLM back end configured: set CODESIGHT_LLM_BACKEND to anthropic, openai, azure or ollama{hint}",
            exit_code=2,
        )
    if backend not in BACKENDS:
        raise AskError(f"unknown LLM back end {backend!r}: use anthropic, openai, azure or ollama", exit_code=2)
    explicit_key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    model = settings.llm_model or DEFAULT_MODELS.get(backend)
    cfg = LLMConfig(
        backend,
        model or "",
        timeout=settings.llm_timeout,
        max_seconds=max(settings.llm_timeout, settings.ask_max_seconds),
    )
    if backend == "anthropic":
        cfg.api_key = explicit_key or env.get("ANTHROPIC_API_KEY")
        cfg.base_url = settings.llm_base_url or env.get("ANTHROPIC_BASE_URL")
    elif backend == "openai":
        cfg.api_key = explicit_key or env.get("OPENAI_API_KEY")
        cfg.base_url = settings.llm_base_url or env.get("OPENAI_BASE_URL")
    elif backend == "azure":
        cfg.api_key = explicit_key or env.get("AZURE_OPENAI_API_KEY")
        cfg.base_url = settings.llm_base_url or env.get("AZURE_OPENAI_ENDPOINT")
        cfg.api_version = env.get("OPENAI_API_VERSION") or AZURE_API_VERSION
        if not cfg.base_url:
            raise AskError("azure needs its endpoint: set AZURE_OPENAI_ENDPOINT", exit_code=2)
        if not model:
            raise AskError("azure needs the deployment to use: set CODESIGHT_LLM_MODEL", exit_code=2)
    else:
        cfg.base_url = settings.llm_base_url or env.get("OLLAMA_HOST") or OLLAMA_HOST
    if backend in KEY_VARIABLES and not cfg.api_key:
        raise AskError(f"{backend} needs an API key: set {KEY_VARIABLES[backend]}", exit_code=2)
    return cfg


# --- back ends: each yields text deltas, then a final dict of usage ---------------------------

_CLIENTS: dict[tuple[object, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_SDK = {"anthropic": "anthropic", "openai": "openai", "azure": "openai", "ollama": "ollama"}


def prepare(backend: str) -> threading.Thread:
    """Import a back end's client library in a thread (0.3 to 0.9 s), so that it overlaps the
    search instead of following it."""
    t = threading.Thread(
        target=importlib.import_module, args=(_SDK[backend],), daemon=True, name="codesight-ask-import"
    )
    t.start()
    return t


def _client(cfg: LLMConfig) -> Any:
    """One client per configuration, kept: a second question reuses its connection."""
    key = (cfg.backend, cfg.base_url, cfg.api_version, cfg.timeout, hash(cfg.api_key))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            if cfg.backend == "anthropic":
                import anthropic

                client = anthropic.Anthropic(
                    api_key=cfg.api_key, base_url=cfg.base_url or None, timeout=cfg.timeout, max_retries=1
                )
            elif cfg.backend == "azure":
                import openai

                client = openai.AzureOpenAI(
                    api_key=cfg.api_key,
                    azure_endpoint=cfg.base_url or "",
                    api_version=cfg.api_version,
                    timeout=cfg.timeout,
                    max_retries=1,
                )
            elif cfg.backend == "openai":
                import openai

                client = openai.OpenAI(
                    api_key=cfg.api_key, base_url=cfg.base_url or None, timeout=cfg.timeout, max_retries=1
                )
            else:
                import ollama

                client = ollama.Client(host=cfg.base_url, timeout=cfg.timeout)
            _CLIENTS[key] = client
        return client


def _anthropic(cfg: LLMConfig, prompt: str) -> Generator[str | dict[str, int], None, None]:
    client = _client(cfg)
    with client.messages.stream(
        model=cfg.model,
        max_tokens=MAX_ANSWER_TOKENS,
        system=SYSTEM_PROMPT,
        messages=[{"role": "user", "content": prompt}],
    ) as stream:
        yield from stream.text_stream
        usage = stream.get_final_message().usage
    yield {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _openai(cfg: LLMConfig, prompt: str) -> Generator[str | dict[str, int], None, None]:
    stream = _client(cfg).chat.completions.create(
        model=cfg.model,
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=MAX_ANSWER_TOKENS,
        messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
    )
    usage = None
    with stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content
            if getattr(chunk, "usage", None):
                usage = {"input_tokens": chunk.usage.prompt_tokens, "output_tokens": chunk.usage.completion_tokens}
    yield usage or {}


def _ollama(cfg: LLMConfig, prompt: str) -> Generator[str | dict[str, int], None, None]:
    usage: dict[str, int] = {}
    for part in _client(cfg).chat(
        model=cfg.model,
        stream=True,
        messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
    ):
        if part.message and part.message.content:
            yield part.message.content
        if part.done:
            usage = {"input_tokens": part.prompt_eval_count, "output_tokens": part.eval_count}
    yield usage


_CALLS: dict[str, Callable[[LLMConfig, str], Generator[str | dict[str, int], None, None]]] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "azure": _openai,
    "ollama": _ollama,
}


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and status > 0 else None


def explain(exc: BaseException, cfg: LLMConfig) -> str:
    """One line for a person: what went wrong with the back end, and what to do. Never the key."""
    name = {"anthropic": "Anthropic", "openai": "OpenAI", "azure": "Azure OpenAI", "ollama": "Ollama"}[cfg.backend]
    kind = type(exc).__name__
    status = _status_of(exc)
    where = f" at {cfg.base_url}" if cfg.base_url else ""
    if "Timeout" in kind or "timed out" in str(exc).lower():
        return f"{name} did not answer within {cfg.timeout:g} s (CODESIGHT_LLM_TIMEOUT)"
    if status in (401, 403) or "Authentication" in kind or "PermissionDenied" in kind:
        var = KEY_VARIABLES.get(cfg.backend, "the API key")
        return f"{name} refused the API key (HTTP {status or 401}): check {var}"
    if status == 404 or "NotFound" in kind:
        hint = f"run `ollama pull {cfg.model}`" if cfg.backend == "ollama" else "set CODESIGHT_LLM_MODEL"
        return f"{name} has no model {cfg.model!r} (HTTP 404): {hint}"
    if status == 429 or "RateLimit" in kind:
        return f"{name} is rate limiting requests (HTTP 429): wait a moment and ask again"
    if cfg.backend == "ollama" and (isinstance(exc, ConnectionError) or "Connect" in kind):
        return f"Ollama is not running{where}: start it with `ollama serve` (or set OLLAMA_HOST)"
    if "Connection" in kind or isinstance(exc, (ConnectionError, OSError)):
        return f"cannot reach {name}{where}: {_first_line(exc) or kind}"
    detail = _first_line(_body_message(exc) or getattr(exc, "error", None) or exc)
    return f"{name} failed" + (f" (HTTP {status})" if status else "") + (f": {detail}" if detail else f": {kind}")


def _body_message(exc: BaseException) -> str | None:
    """The ``message`` of an API's JSON error body (``{"error": {"message": ...}}`` and kin)."""
    body = getattr(exc, "body", None)
    while isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str):
            return message
        body = body.get("error")
    return body if isinstance(body, str) else None


def _first_line(obj: object) -> str:
    text = str(obj or "").strip().split("\n", 1)[0]
    return text[:200]


def _scrub(text: str, cfg: LLMConfig) -> str:
    return text.replace(cfg.api_key, "***") if cfg.api_key and cfg.api_key in text else text


class AskStream:
    """Text deltas as the back end sends them; once iterated, ``answer`` is the whole ``Answer``.

    ``for delta in stream: print(delta, end="")`` then ``stream.answer``. Errors are ``AskError``
    with one line."""

    def __init__(
        self,
        question: str,
        hits: Iterable[SearchResult],
        cfg: LLMConfig,
        search_seconds: float = 0.0,
        started: float | None = None,
    ) -> None:
        self.cfg = cfg
        self.hits = list(hits)
        # what happened to the index (damage, a rebuild) and what the search lacked (BM25 only)
        self.notices = (
            list(hits.notices) + [g.text for g in hits.gaps if g.lack is not Lack.FULL_UNUSED]
            if isinstance(hits, SearchResponse)
            else []
        )
        self.answer = Answer(question, "", self.hits, cfg.model, cfg.backend, search_seconds=search_seconds)
        self._started = started if started is not None else time.perf_counter()

    def __iter__(self) -> Iterator[str]:
        cfg = self.cfg
        prompt = build_prompt(self.answer.question, self.hits)
        parts: list[str] = []
        size = 0
        t0 = time.perf_counter()
        calls = _CALLS[cfg.backend](cfg, prompt)
        try:
            for item in calls:
                if isinstance(item, dict):
                    self.answer.usage = item or None
                    continue
                if self.answer.first_token_seconds is None:
                    self.answer.first_token_seconds = time.perf_counter() - t0
                if size + len(item) > MAX_ANSWER_CHARS:
                    item = item[: MAX_ANSWER_CHARS - size]
                    self.answer.cut = f"the answer was cut at {MAX_ANSWER_CHARS:,} characters"
                size += len(item)
                if item:
                    parts.append(item)
                    yield item
                if self.answer.cut is None and time.perf_counter() - t0 > cfg.max_seconds:
                    self.answer.cut = f"the answer was cut after {cfg.max_seconds:g} s (CODESIGHT_ASK_MAX_SECONDS)"
                if self.answer.cut is not None:
                    break
        except AskError:
            raise
        except Exception as exc:  # noqa: BLE001 - every client library raises its own types: explained in one line
            raise AskError(_scrub(explain(exc, cfg), cfg)) from None
        finally:
            calls.close()  # ends the back end's stream (and its connection) when the answer was cut
            self.answer.text = "".join(parts)
            self.answer.seconds = time.perf_counter() - self._started


def ask_stream(searcher: Searcher, settings: Settings, request: SearchRequest) -> AskStream:
    """``request.query``, a question, answered from what ``searcher`` (a repository, a fleet,
    several) finds for it, as the LLM writes it: an ``AskStream``. The back end's configuration is
    checked before the search, and the search runs before any connection is opened. Raises
    ``AskError`` with one line."""
    cfg = llm_config(settings)
    question = request.query
    if not question or not question.strip():
        raise AskError("the question is empty", exit_code=2)
    started = time.perf_counter()
    importing = prepare(cfg.backend)  # the client library loads while the search runs
    hits = without_secrets(searcher.search(request), tuple(settings.secret_files))
    if not hits:
        raise AskError("nothing in the index matches this question: there are no sources to answer from")
    importing.join()
    return AskStream(question, hits, cfg, search_seconds=time.perf_counter() - started, started=started)


def without_secrets(hits: SearchResponse, secret_files: tuple[str, ...]) -> SearchResponse:
    """The hits that may go to an LLM: none from a file named like a secret, none whose text holds
    a key or a token (``core.redact``), even from an index built before secrets were masked.
    What was left out is said in a notice."""
    from codesight_tui.core.redact import flagged, secret_name

    kept = [h for h in hits if not secret_name(h.path, secret_files) and not flagged(h.content)]
    notices = list(hits.notices)
    if len(kept) < len(hits):
        n = len(hits) - len(kept)
        notices.append(
            f"{n} source{'s' if n > 1 else ''} left out of the question: {'they hold' if n > 1 else 'it holds'}"
            " a secret (a key or a token)"
        )
    answer = hits.with_hits(kept)
    answer.notices = notices
    return answer
