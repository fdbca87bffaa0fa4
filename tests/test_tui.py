"""Pilot tests: the real app on a real index (SQLite + LanceDB in tmp_path), driven by key presses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
import time

import pytest

from codesight_tui import CodeSight
from codesight_tui.core.errors import CodeSightError
from codesight_tui.tui.app import CodeSightApp
from codesight_tui.tui.messages import IndexFinished, ModelFailed, SearchFinished
from codesight_tui.tui.widgets.preview import Preview
from codesight_tui.tui.widgets.results import ResultsList
from conftest import HashEmbedder

SIZE = (120, 36)


def make_app(repo, settings, embedder=None, **kw):
    engine = CodeSight(repo, settings=settings, embedder=embedder or HashEmbedder())
    kw.setdefault("watch", False)
    return CodeSightApp(repo, engine=engine, **kw)


async def settle(app, pilot, timeout: float = 20.0):
    """Wait until no index run or search is pending."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if app.index_idle.is_set() and not app._indexing and not app.search_busy:
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            if app.index_idle.is_set() and not app.search_busy:
                return
    raise AssertionError("app did not settle")


async def search(app, pilot, text: str):
    app.query_one("#query").value = ""
    await pilot.click("#query")
    await pilot.press(*text)
    await settle(app, pilot)


async def test_typing_shows_results_and_preview(repo, settings):
    messages = []
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(app, pilot)
        assert any(isinstance(m, IndexFinished) for m in messages)
        assert app.state.files >= 8 and app.state.vectors == app.state.chunks
        await search(app, pilot, "haversine")
        results = app.query_one(ResultsList)
        assert results.option_count >= 1
        assert app.hits[0].path == "src/geo.py"
        preview = app.query_one(Preview)
        assert preview.current is app.hits[0]
        # coalesced: never more searches than keystrokes, each for a longer prefix, the last for
        # the whole word (a result for older text never lands after a newer one)
        finished = [m.key[0] for m in messages if isinstance(m, SearchFinished) and m.key[0].startswith("hav")]
        assert 1 <= len(finished) <= len("haversine") and finished[-1] == "haversine"
        assert all(len(a) < len(b) for a, b in zip(finished, finished[1:]))
        # Down moves into the list; j/k navigate; the preview follows the selection
        await pilot.press("down")
        assert app.focused is results
        await search(app, pilot, "password")
        await pilot.press("enter")  # Enter in the query box moves to the results
        assert app.focused is results
        await pilot.press("j")
        assert results.highlighted == 1 and preview.current is app.hits[1]
        await pilot.press("k")
        assert results.highlighted == 0 and preview.current is app.hits[0]
        await pilot.press("escape")
        assert app.focused is app.query_one("#query")


async def test_late_result_of_an_old_query_is_dropped(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        shown = list(app.hits)
        app.post_message(SearchFinished("an older query", "hybrid", [], 1.0))
        await pilot.pause(0.1)
        assert app.hits == shown


async def test_mode_toggle_and_filters(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "config")
        assert app.mode == "hybrid"
        await pilot.press("tab")
        await settle(app, pilot)
        assert app.mode == "bm25" and app.hits and all(h.vector_rank is None for h in app.hits)
        await pilot.press("tab")
        await settle(app, pilot)
        assert app.mode == "vector" and app.hits and all(h.bm25_rank is None for h in app.hits)
        await pilot.press("tab")
        assert app.mode == "hybrid"
        await pilot.press("ctrl+f")
        await pilot.pause(0.1)
        await pilot.press(*"web/")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.glob == "web/" and app.hits and {h.path for h in app.hits} == {"web/client.js"}
        assert "glob:web/" in app.query_one("#status").render_state(app.state)
        await pilot.press("ctrl+f")
        await pilot.pause(0.1)
        app.screen.query_one("#filter-glob").value = ""
        app.screen.query_one("#filter-lang").value = "go"
        await pilot.click("#filter-lang")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.language == "go" and all(h.language == "go" for h in app.hits)


def _fake_editor(tmp_path, name="vim"):
    log = tmp_path / "argv.log"
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> {log}; done\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


async def test_open_in_editor_runs_the_editor_with_the_line(repo, settings, tmp_path, monkeypatch):
    script, log = _fake_editor(tmp_path, "nvim")
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        # The headless driver can't suspend; stand in for a real terminal here.
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("enter")  # to the results
        await pilot.press("enter")  # open
        await pilot.pause(0.2)
        hit = app.hits[0]
        # at the definition's own line, not the chunk's first (issue 20, item 1)
        defline = _line_of(repo / hit.path, "def haversine")
        assert log.read_text().split("\n")[:2] == [f"+{defline}", str(repo / hit.path)]
        log.unlink()
        await pilot.press("o")
        await pilot.pause(0.2)
        assert log.read_text().startswith(f"+{defline}\n")


async def test_open_in_editor_when_suspend_is_not_supported(repo, settings, tmp_path, monkeypatch):
    script, log = _fake_editor(tmp_path)
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("enter", "o")
        await pilot.pause(0.2)
        assert not log.exists()  # nothing ran, nothing crashed
        assert any("can't be suspended" in n.message for n in app._notifications)


def _line_of(path, prefix: str) -> int:
    return next(n for n, line in enumerate(path.read_text().split("\n"), 1) if line.startswith(prefix))


async def test_copy_location_and_snippet(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("enter", "y")
        hit = app.hits[0]
        assert app.clipboard == f"{hit.path}:{_line_of(repo / hit.path, 'def haversine')}"
        await pilot.press("Y")
        assert app.clipboard == hit.content
        assert any("Copied" in n.message for n in app._notifications)


async def test_reindex_picks_up_changes(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        (repo / "src" / "fresh.py").write_text("def brand_new_function_xyz():\n    return 42\n")
        await search(app, pilot, "brand_new_function_xyz")
        assert all(h.path != "src/fresh.py" for h in app.hits)
        await pilot.press("ctrl+r")
        await pilot.pause(0.1)
        await settle(app, pilot)
        assert app.hits and app.hits[0].path == "src/fresh.py"


async def test_watcher_marks_stale_then_reindexes(repo, settings):
    app = make_app(repo, settings, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.pause(0.5)  # let the watcher start
        (repo / "src" / "geo.py").write_text((repo / "src" / "geo.py").read_text() + "\n\ndef rhumb_line():\n    pass\n")
        (repo / "build").mkdir(exist_ok=True)
        (repo / "build" / "junk.py").write_text("IGNORED = 1\n")  # ignored: never stale
        seen_stale = False
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            await pilot.pause(0.05)
            if "src/geo.py" in app.state.stale:
                seen_stale = True
                assert "build/junk.py" not in app.state.stale
            if seen_stale and not app.state.stale and app.index_idle.is_set():
                break
        assert seen_stale, "the change was never noticed"
        await settle(app, pilot)
        assert not app.state.stale
        await search(app, pilot, "rhumb_line")
        assert app.hits and app.hits[0].path == "src/geo.py"


class SlowEmbedder(HashEmbedder):
    def encode(self, texts):
        time.sleep(0.3)
        return super().encode(texts)


async def test_quit_during_indexing_is_immediate_and_cancels(repo, settings):
    for i in range(120):  # about 1,000 chunks: 8 batches of 128, so a Ctrl+C after the first leaves work
        (repo / f"bulk_{i}.py").write_text("".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(60)))
    app = make_app(repo, settings, embedder=SlowEmbedder())
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 20
        # Wait for the first batch to be written (progress comes after the write): a Ctrl+C
        # before it leaves nothing to keep, and the check below would race the embedder.
        while not (app.state.phase == "embed" and app.state.phase_done > 0) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.state.phase == "embed" and app.state.phase_done > 0
        t0 = time.monotonic()
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
    assert time.monotonic() - t0 < 2.0
    # the worker saw the cancellation and stopped at a batch boundary
    assert await asyncio.to_thread(app.index_idle.wait, 5.0)
    st = app.engine.status(check_disk=False)
    assert 0 < st["vectors"] < st["chunks"]  # partial progress kept, resumable


class BrokenModelEngine(CodeSight):
    """A CodeSight whose model cannot load, as when the weights are missing."""

    def embedder(self):
        self._embedder_error = "cannot load embedding model 'missing-model': not found"
        raise CodeSightError(self._embedder_error)


async def test_model_failure_falls_back_to_lexical(repo, settings):
    engine = BrokenModelEngine(repo, settings=settings)
    app = CodeSightApp(repo, engine=engine, watch=False)
    messages = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(app, pilot)
        assert any(isinstance(m, ModelFailed) for m in messages)
        assert app.state.model_state == "failed"
        assert any("lexical" in n.message for n in app._notifications)
        await search(app, pilot, "haversine")
        assert app.hits and app.hits[0].path == "src/geo.py"  # BM25 still answers


async def test_help_screen_lists_every_binding(repo, settings):
    from codesight_tui.tui.screens.help import HelpScreen

    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        ids = {b.id for _, group in app.screen.groups for b in group if b.id}
        for b in list(app.BINDINGS) + list(ResultsList.BINDINGS):
            assert b.id and b.description and b.id in ids
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_command_palette_has_every_action(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Open in editor", "Copy path:line", "Copy snippet", "Cycle search mode", "Filter results",
                "Re-index", "Keys"} <= titles


def test_editor_argv_syntaxes():
    from codesight_tui.tui.editor import editor_argv

    env = lambda ed: {"EDITOR": ed}  # noqa: E731
    assert editor_argv("/r/a.py", 7, environ=env("vim")) == ["vim", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("nvim")) == ["nvim", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("emacsclient -nw")) == ["emacsclient", "-nw", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("nano")) == ["nano", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("micro")) == ["micro", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("hx")) == ["hx", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("code --wait")) == ["code", "--wait", "-g", "/r/a.py:7"]
    assert editor_argv("/r/a.py", 7, environ={"VISUAL": "nvim", "EDITOR": "nano"})[0] == "nvim"
    assert editor_argv("/r/a.py", 7, environ={}) == ["vi", "+7", "/r/a.py"]
    assert editor_argv("/r/my file.py", 3, template="subl {path}:{line}") == ["subl", "/r/my file.py:3"]
    assert editor_argv("/r/a.py", 3, template="myed --line {line}") == ["myed", "--line", "3", "/r/a.py"]
    # never a shell: metacharacters stay inside one argument
    assert editor_argv("/r/$(rm -rf x);.py", 1, environ=env("vim"))[-1] == "/r/$(rm -rf x);.py"


async def test_same_hits_are_not_repainted_but_new_stale_marks_are(repo, settings):
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        results = app.query_one(ResultsList)
        results.highlighted = min(1, results.option_count - 1)
        assert results.show(list(app.hits), set(app.state.stale)) is False  # same hits: keep the cursor
        assert results.highlighted == min(1, results.option_count - 1)
        assert results.show(list(app.hits), {app.hits[0].path}) is True  # a stale mark must show
        assert "stale" in str(results.get_option_at_index(0).prompt)
