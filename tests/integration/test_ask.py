"""`ask` against real HTTP: a stub server on 127.0.0.1 that speaks each back end's wire format
(tests/llmstub.py), driven through the official client libraries, errors included."""

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import HashEmbedder
from llmstub import ANSWER, StubServer
from surfaces import KEY, llm_env
from textual.pilot import Pilot
from textual.widgets import Input

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.search.ask import AskError, build_prompt, cited

BACKENDS = ("anthropic", "openai", "azure", "ollama")


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture
def indexed(repo: Path, hash_embedder: HashEmbedder) -> Iterator[CodeSight]:
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    yield cs
    cs.close()


def test_no_back_end_configured_is_one_line_and_no_connection(
    indexed: CodeSight, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CODESIGHT_LLM_BACKEND", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    cs = CodeSight(indexed.root)
    with pytest.raises(AskError) as err:
        cs.ask("how are passwords hashed?")
    assert str(err.value) == (
        "no LLM back end configured: set CODESIGHT_LLM_BACKEND to anthropic, openai, azure"
        " or ollama (OPENAI_API_KEY is set)"
    )
    assert err.value.exit_code == 2
    monkeypatch.setenv("CODESIGHT_LLM_BACKEND", "openai")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(AskError, match="openai needs an API key: set OPENAI_API_KEY"):
        CodeSight(indexed.root).ask("how are passwords hashed?")
    cs.close()


@pytest.mark.loopback
@pytest.mark.parametrize("backend", BACKENDS)
def test_answer_streams_and_cites_its_sources(
    backend: str, indexed: CodeSight, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_env(monkeypatch, backend, stub.url)
    cs = CodeSight(indexed.root, embedder=indexed.models.loaded)
    stream = cs.ask_stream("how are passwords hashed and verified?", top_k=4)
    deltas = list(stream)
    answer = stream.answer
    assert deltas == ANSWER and answer.text == "".join(ANSWER)  # streamed piece by piece
    assert answer.citations == [1, 2]  # [9] is no source: dropped
    assert answer.usage == {"input_tokens": 321, "output_tokens": 27}
    assert (answer.backend, answer.model) == (backend, "stub-model")
    assert len(answer.sources) == 4 and answer.sources[0].path == "src/auth.py"

    (request,) = stub.requests
    body = request["body"]
    if backend == "anthropic":
        assert request["path"] == "/v1/messages"
        assert KEY in (request["headers"].get("x-api-key"), request["headers"].get("authorization", "")[7:])
        assert body["stream"] is True and body["model"] == "stub-model"
        prompt = body["messages"][0]["content"]
    elif backend == "ollama":
        assert request["path"] == "/api/chat" and body["stream"] is True
        prompt = body["messages"][1]["content"]
    else:
        if backend == "azure":
            assert request["path"] == "/openai/deployments/stub-model/chat/completions?api-version=2024-10-21"
            assert request["headers"]["api-key"] == KEY
        else:
            assert request["path"] == "/v1/chat/completions"
            assert request["headers"]["authorization"] == f"Bearer {KEY}"
        assert body["stream"] is True
        prompt = body["messages"][1]["content"]
    # The prompt holds every source, numbered as the answer cites them, with its location and text.
    for n, hit in enumerate(answer.sources, start=1):
        assert f"[{n}] {hit.path}:{hit.start_line}-{hit.end_line}" in prompt
        assert hit.content[:200] in prompt
    assert prompt.startswith("Question: how are passwords hashed and verified?")
    d = answer.to_dict()
    assert [s["cited"] for s in d["sources"]] == [True, True, False, False]
    assert KEY not in json.dumps(d) and KEY not in repr(cs.settings)
    cs.close()


FAILURES = [
    ("missing", KEY, "has no model 'missing' (HTTP 404)"),
    ("busy", KEY, "is rate limiting requests (HTTP 429): wait a moment and ask again"),
    ("slow", KEY, "did not answer within 2 s (CODESIGHT_LLM_TIMEOUT)"),
    ("stub-model", "bad-key", "refused the API key (HTTP 401)"),
]


@pytest.mark.loopback
@pytest.mark.parametrize(
    "backend,model,key,expected",
    [
        (backend, *failure)
        for backend in BACKENDS
        for failure in FAILURES
        if not (backend == "ollama" and failure[1] == "bad-key")
    ],
)  # Ollama takes no key
def test_back_end_errors_are_one_line_and_search_goes_on(
    backend: str,
    model: str,
    key: str,
    expected: str,
    indexed: CodeSight,
    stub: StubServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_env(monkeypatch, backend, stub.url, model=model, key=key)
    cs = CodeSight(indexed.root, embedder=indexed.models.loaded)
    with pytest.raises(AskError) as err:
        cs.ask("how are passwords hashed?")
    message = str(err.value)
    assert expected in message and "\n" not in message and key not in message
    if model == "missing":
        assert ("ollama pull missing" if backend == "ollama" else "CODESIGHT_LLM_MODEL") in message
    assert cs.search("hash_password", mode="bm25")[0].path == "src/auth.py"  # a failed ask affects nothing
    cs.close()


@pytest.mark.loopback
def test_ollama_not_running_says_so(indexed: CodeSight, monkeypatch: pytest.MonkeyPatch) -> None:
    with StubServer() as gone:
        url = gone.url
    llm_env(monkeypatch, "ollama", url)  # the port is closed now
    with pytest.raises(AskError) as err:
        CodeSight(indexed.root, embedder=indexed.models.loaded).ask("how are passwords hashed?")
    assert str(err.value) == f"Ollama is not running at {url}: start it with `ollama serve` (or set OLLAMA_HOST)"


def test_citations_map_back_to_sources() -> None:
    assert cited("A [2], B [1, 3] and [2] again; [0] [7] [x]", 3) == [2, 1, 3]
    assert cited("no marks", 3) == []


def test_prompt_names_document_pages(indexed: CodeSight) -> None:
    from codesight_tui.core.search.contract import SearchResult

    hits = [
        SearchResult("docs/spec.pdf", 40, 52, "page 12", "pdf", 1.0, 1, None, "The quota resets nightly.", 7, page=12),
        SearchResult("deck.pptx", 3, 9, "slide 4: Plan", "pptx", 1.0, 2, None, "Ship it", 8, slide=4),
    ]
    prompt = build_prompt("when does the quota reset?", hits)
    assert "[1] docs/spec.pdf p.12\n```text\nThe quota resets nightly.\n```" in prompt
    assert "[2] deck.pptx slide 4\n" in prompt


@pytest.mark.loopback
def test_cli_ask_streams_then_lists_sources(repo: Path, stub: StubServer, settings: Settings) -> None:
    env = {
        **os.environ,
        "CODESIGHT_LLM_BACKEND": "openai",
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": stub.url + "/v1",
        "CODESIGHT_LLM_MODEL": "stub-model",
        "NO_COLOR": "1",
    }

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", *a], cwd=repo, env=env, capture_output=True, text=True, timeout=300
        )

    assert run("index", "--no-embed").returncode == 0
    out = run("ask", "how are passwords hashed?", "--top-k", "3")
    assert out.returncode == 0, out.stderr
    text, _, sources = out.stdout.partition("\nSources:\n")
    assert text.strip() == "".join(ANSWER)
    lines = sources.splitlines()
    assert 1 <= len(lines) <= 3 and lines[0].startswith("  [1] src/auth.py:")
    assert [line.endswith("(not cited)") for line in lines] == [n > 2 for n in range(1, len(lines) + 1)]
    assert "openai stub-model" in out.stderr and KEY not in out.stdout + out.stderr
    out = run("ask", "how are passwords hashed?", "--json")
    d = json.loads(out.stdout)
    assert d["answer"] == "".join(ANSWER) and d["sources"][0]["n"] == 1
    assert d["citations"] == [n for n in (1, 2) if n <= len(d["sources"])]
    bad = run("ask", "how are passwords hashed?")
    assert bad.returncode == 0
    env["CODESIGHT_LLM_MODEL"] = "missing"
    bad = run("ask", "how are passwords hashed?")
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1] == (
        "codesight: OpenAI has no model 'missing' (HTTP 404): set CODESIGHT_LLM_MODEL"
    )
    assert "Traceback" not in bad.stderr
    env.pop("CODESIGHT_LLM_BACKEND")
    none = run("ask", "how are passwords hashed?")
    assert none.returncode == 2 and "no LLM back end configured" in none.stderr


@pytest.mark.loopback
def test_keys_are_never_written_to_the_index_or_logs(
    repo: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    llm_env(monkeypatch, "anthropic", stub.url)
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    cs.ask("how are passwords hashed?")
    cs.index()
    cs.close()
    for base in (settings.data_dir, settings.cache_dir):
        for dirpath, _, files in os.walk(base):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as fh:
                    assert KEY.encode() not in fh.read(), name


async def _wait_for(pilot: Pilot[int], condition: Callable[[], object], timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if condition():
            return
    raise AssertionError("timed out")


@pytest.mark.loopback
async def test_tui_ask_view_streams_the_answer_and_jumps_to_a_source(
    repo: Path, settings: Settings, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from surfaces import make_app, settle
    from textual.widgets import Markdown, OptionList

    from codesight_tui.tui.screens.ask import AskScreen
    from codesight_tui.tui.widgets.preview import Preview
    from codesight_tui.tui.widgets.results import ResultsList

    llm_env(monkeypatch, "ollama", stub.url)
    app = make_app(repo, settings.model_copy(update={"llm_backend": "ollama", "llm_model": "stub-model"}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.query_one("#query", Input).value = "how are passwords hashed"
        await pilot.press("f3")
        await _wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        screen = app.screen
        assert isinstance(screen, AskScreen)
        assert screen.query_one("#ask-question", Input).value == "how are passwords hashed"
        await pilot.press("enter")
        await _wait_for(pilot, lambda: screen.answer is not None)
        assert "".join(ANSWER) in screen.query_one(Markdown).source
        sources = screen.query_one("#ask-sources", OptionList)
        assert screen.answer is not None and sources.option_count == len(screen.answer.sources) >= 1
        assert "ollama stub-model" in str(screen.query_one("#ask-status").render())
        await pilot.press("tab")
        await pilot.press("enter")  # the first source: back to the search view, shown in the preview
        await _wait_for(pilot, lambda: not isinstance(app.screen, AskScreen))
        await settle(app, pilot)
        assert screen.answer is not None and app.hits[0].path == screen.answer.sources[0].path
        assert app.query_one(ResultsList).highlighted == 0
        await _wait_for(pilot, lambda: app.query_one(Preview).current is app.hits[0])


@pytest.mark.loopback
async def test_tui_ask_view_shows_each_piece_as_it_comes(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35, item 3: pieces sent 0.8 s apart appeared all at once at the end (the view read
    the Answer's text, which is whole only when the stream ends); and with Ollama configured the
    view still said "No back end yet?"."""
    from surfaces import make_app, settle
    from textual.widgets import Markdown

    from codesight_tui.tui.screens.ask import AskScreen

    with StubServer(delay=0.8) as slow:
        llm_env(monkeypatch, "ollama", slow.url)
        app = make_app(repo, settings.model_copy(update={"llm_backend": "ollama", "llm_model": "stub-model"}))
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            app.query_one("#query", Input).value = "how are passwords hashed"
            await pilot.press("f3")
            await _wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
            screen = app.screen
            assert isinstance(screen, AskScreen)
            shown = screen.query_one(Markdown).source
            assert "No back end yet" not in shown and "ollama" in shown and "stub-model" in shown
            await pilot.press("enter")
            await _wait_for(pilot, lambda: ANSWER[0].strip() in screen.query_one(Markdown).source)
            assert screen.answer is None and ANSWER[-1] not in screen.query_one(Markdown).source  # a piece, not all
            await _wait_for(pilot, lambda: screen.answer is not None, timeout=30)
            assert "".join(ANSWER) in screen.query_one(Markdown).source


async def test_tui_ask_without_a_back_end_says_how_to_set_one(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from surfaces import make_app, settle
    from textual.widgets import Markdown

    from codesight_tui.tui.screens.ask import AskScreen

    monkeypatch.delenv("CODESIGHT_LLM_BACKEND", raising=False)
    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("f3")
        await _wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press(*"where is the server started", "enter")
        await _wait_for(pilot, lambda: "Ask failed" in app.screen.query_one(Markdown).source)
        assert "CODESIGHT_LLM_BACKEND" in app.screen.query_one(Markdown).source
        assert any("no LLM back end configured" in n.message for n in app._notifications)
        await pilot.press("escape")
        assert not isinstance(app.screen, AskScreen)
