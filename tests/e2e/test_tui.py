"""Pilot tests: the real app on a real index (SQLite + LanceDB in tmp_path), driven by key presses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import HashEmbedder
from rich.style import Style
from surfaces import BrokenModelEngine, make_app, search, settle
from textual.binding import Binding
from textual.events import Key
from textual.message import Message
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import Input, Static

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.tui.app import CodeSightApp
from codesight_tui.tui.messages import IndexFinished, ModelFailed, SearchFinished
from codesight_tui.tui.widgets.preview import Preview
from codesight_tui.tui.widgets.results import ResultsList
from codesight_tui.tui.widgets.status import StatusBar

SIZE = (120, 36)


async def test_typing_shows_results_and_preview(repo: Path, settings: Settings) -> None:
    messages: list[Message] = []
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
        assert all(len(a) < len(b) for a, b in zip(finished, finished[1:], strict=False))
        # fzf: the query keeps the focus; Down/Up move the selection; the preview follows it
        await search(app, pilot, "password")
        query = app.query_one("#query", Input)
        await pilot.press("down")
        assert app.focused is query and results.highlighted == 1 and preview.current is app.hits[1]
        await pilot.press("up")
        assert results.highlighted == 0 and preview.current is app.hits[0]
        await pilot.press("pagedown")
        assert results.highlighted == len(app.hits) - 1 or results.highlighted > 1


async def test_late_result_of_an_old_query_is_dropped(repo: Path, settings: Settings) -> None:
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        shown = list(app.hits)
        app.post_message(SearchFinished(("an older query", "hybrid", "", ""), [], 1.0))
        await pilot.pause(0.1)
        assert app.hits == shown


async def test_mode_toggle_and_filters(repo: Path, settings: Settings) -> None:
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
        assert "glob:web/" in str(app.query_one("#status", StatusBar).render_state(app.state))
        # issue 48 item 23: the list says its filter too (the status bar can lose it at 80 columns)
        assert str(app.query_one(ResultsList).border_title).endswith("· glob:web/")
        await pilot.press("ctrl+f")
        await pilot.pause(0.1)
        app.screen.query_one("#filter-glob", Input).value = ""
        app.screen.query_one("#filter-lang", Input).value = "go"
        await pilot.click("#filter-lang")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.language == "go" and all(h.language == "go" for h in app.hits)


def _fake_editor(tmp_path: Path, name: str = "vim") -> tuple[Path, Path]:
    log = tmp_path / "argv.log"
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do echo "$a" >> {log}; done\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


async def test_open_in_editor_runs_the_editor_with_the_line(
    repo: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, log = _fake_editor(tmp_path, "nvim")
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        # The headless driver can't suspend; stand in for a real terminal here.
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("enter")  # Enter in the query box opens the selected hit
        await pilot.pause(0.2)
        hit = app.hits[0]
        # at the definition's own line, not the chunk's first (issue 20, item 1)
        defline = _line_of(repo / hit.path, "def haversine")
        assert log.read_text().split("\n")[:2] == [f"+{defline}", str(repo / hit.path)]
        log.unlink()
        app.action_focus_results()  # and so does Enter in the list
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert log.read_text().startswith(f"+{defline}\n")


async def test_an_editor_without_a_line_syntax_is_told_once(
    repo: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35, item 7: an unknown $EDITOR opened the file at its top, silently. Issue 66, item 19:
    it got only the path; it gets ``+LINE PATH`` now, as vi, emacs, nano, micro, helix and kak do,
    and the popup that explains CODESIGHT_EDITOR stays."""
    script, log = _fake_editor(tmp_path, "myeditor")
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        for _ in range(2):
            await pilot.press("enter")
            await pilot.pause(0.2)
        hit = app.hits[0]
        assert log.read_text().split("\n")[:2] == [f"+{hit.line or hit.start_line}", str(repo / hit.path)]
        told = [n.message for n in app._notifications if "CODESIGHT_EDITOR" in n.message]
        assert len(told) == 1 and "myeditor" in told[0]


async def test_open_in_editor_when_suspend_is_not_supported(
    repo: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, log = _fake_editor(tmp_path)
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert not log.exists()  # nothing ran, nothing crashed
        assert any("can't be suspended" in n.message for n in app._notifications)


def _line_of(path: Path, prefix: str) -> int:
    return next(n for n, line in enumerate(path.read_text().split("\n"), 1) if line.startswith(prefix))


async def test_copy_location_and_snippet(repo: Path, settings: Settings) -> None:
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("ctrl+y")
        hit = app.hits[0]
        where = f"{hit.path}:{_line_of(repo / hit.path, 'def haversine')}"
        assert app.clipboard == where
        await pilot.press("alt+y")
        assert app.clipboard == hit.content


async def test_reindex_picks_up_changes(repo: Path, settings: Settings) -> None:
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


async def test_watcher_marks_stale_then_reindexes(repo: Path, settings: Settings) -> None:
    app = make_app(repo, settings, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.pause(0.5)  # let the watcher start
        (repo / "src" / "geo.py").write_text(
            (repo / "src" / "geo.py").read_text() + "\n\ndef rhumb_line():\n    pass\n"
        )
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
    def encode(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.3)
        return super().encode(texts)


async def test_quit_during_indexing_is_immediate_and_cancels(repo: Path, settings: Settings) -> None:
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


async def test_edits_during_the_first_embedding_are_found_at_once(repo: Path, settings: Settings) -> None:
    """Issue 35, item 1: a function added while the status bar showed "vectors 15%" was not found
    for about 12 minutes, and Ctrl+R did nothing: the watcher started after the last vector, and a
    re-index waited behind the embedding. Now the watcher starts with the first lexical phase, and
    a change (or Ctrl+R) replaces the running embedding: lexical first, then the embedding resumes."""
    (repo / "src" / "loop").unlink()  # inotify, not the poll a symlinked directory asks for
    for i in range(120):
        (repo / f"bulk_{i}.py").write_text("".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(60)))
    app = make_app(repo, settings, embedder=SlowEmbedder(), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 60
        while not (app.state.phase == "embed" and app.state.phase_done > 0) and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert app.state.phase == "embed" and app._watching  # watching before the embedding is over
        (repo / "src" / "added.py").write_text("def pangolin_scales():\n    return 1\n")
        t0 = time.monotonic()
        found = False
        while time.monotonic() - t0 < 60 and not found:
            hits = await asyncio.to_thread(app.engine.search, "pangolin_scales", mode="bm25")
            found = any(h.path == "src/added.py" for h in hits)
            await pilot.pause(0.2)
        took = time.monotonic() - t0
        assert found and app.state.phase in ("embed", "scan", "lexical"), took
        st = app.engine.status(check_disk=False)
        assert st["vectors"] < st["chunks"]  # found long before the embedding could have ended
        # Ctrl+R while embedding: a new run starts now instead of being queued behind this one
        while app.state.phase != "embed" and time.monotonic() - t0 < 60:
            await pilot.pause(0.05)
        job = app.index_job(app.engine)
        runs = job.runs
        await pilot.press("ctrl+r")
        # the embedding stops at its next batch (0.3 s here) and the new run starts: not queued
        # behind an embedding that has more than a hundred batches to go
        await _until(pilot, lambda: job.runs == runs + 1, 5)
        await pilot.press("ctrl+c")


async def test_another_writers_progress_shows_and_is_searched(repo: Path, settings: Settings) -> None:
    """Issue 35, item 4: a TUI whose index run found another writer showed "vectors 0%" while
    `status` said 896 of 2,507 were done, stayed at "0% · bm25+static" for 25 minutes after every
    vector existed, and said "No results" in vector mode until restarted."""

    for i in range(120):
        (repo / f"bulk_{i}.py").write_text("".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(60)))
    other = CodeSight(repo, settings=settings, embedder=SlowEmbedder())
    phases: list[str] = []
    writer = threading.Thread(target=lambda: other.index(progress=lambda ev: phases.append(ev.phase)), daemon=True)
    writer.start()
    deadline = time.monotonic() + 60
    while "embed" not in phases and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    app = make_app(repo, settings, embedder=HashEmbedder())
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app._follow_writer, 30)  # our run found the other writer
        first = app.state.vectors
        await _until(pilot, lambda: app.state.vectors > first, 30)  # its vectors show as they arrive
        writer.join(120)
        chunks = other.counts()["chunks"]
        await _until(pilot, lambda: app.state.vectors >= chunks and not app._follow_writer, 30)
        assert app.state.model_state == "ready"
        app.mode = "vector"
        await search(app, pilot, "f_3_4")
        assert app.hits  # vector mode answers without a restart


async def _until(pilot: Pilot[int], condition: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)


async def test_model_failure_falls_back_to_lexical(repo: Path, settings: Settings) -> None:
    engine = BrokenModelEngine(repo, settings=settings)
    app = CodeSightApp(repo, engine=engine, watch=False)
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(app, pilot)
        assert any(isinstance(m, ModelFailed) for m in messages)
        assert app.state.model_state == "failed"
        assert any("lexical" in n.message for n in app._notifications)
        await search(app, pilot, "haversine")
        assert app.hits and app.hits[0].path == "src/geo.py"  # BM25 still answers


@pytest.mark.model
async def test_on_a_cpu_the_tui_answers_from_the_static_tier_and_loads_no_model(repo: Path, settings: Settings) -> None:
    """Issue 49: hybrid did not beat BM25 + the static tier by 0.01 everywhere it was measured, so
    on a CPU (full_model = auto) the TUI's index run stops after the static tier, no model loads,
    and the status bar says "static tier", never a "vectors 0%" that would never move."""
    from codesight_tui.tui.messages import ModelReady
    from codesight_tui.tui.widgets.status import StatusBar

    engine = CodeSight(repo, settings=settings.model_copy(update={"device": "cpu", "static_model": "auto"}))
    app = CodeSightApp(repo, engine=engine, watch=False)
    messages: list[Message] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(app, pilot, timeout=120)
        await search(app, pilot, "great circle distance between two points")
        assert app.hits and app.hits[0].path == "src/geo.py"
        # The app loads no model (one that another engine of this process holds may be borrowed,
        # which is why embedder_loaded is not asked here: in the full suite, earlier tests load it).
        assert app.state.model_state == "off" and not any(isinstance(m, ModelReady) for m in messages)
        bar = str(app.query_one(StatusBar).render_state(app.state))
        assert "static tier" in bar and "vectors" not in bar and "loading" not in bar, bar
        st = engine.status(check_disk=False)
        assert st["vectors"] == 0 and st["static_vectors"] == st["chunks"]


async def test_help_screen_lists_every_binding(repo: Path, settings: Settings) -> None:
    from codesight_tui.tui.screens.help import HelpScreen

    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        ids = {b.id for _, group in app.screen.groups for b in group if b.id}
        for b in list(app.BINDINGS) + list(ResultsList.BINDINGS):
            assert isinstance(b, Binding) and b.id and b.description and b.id in ids
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_at_60x20_the_footer_keeps_help_and_ask_and_f1_hides_ids(repo: Path, settings: Settings) -> None:
    """Issue 35, item 7: at 60x20 F1 showed internal ids and the footer dropped F1 and F3."""
    import re

    from codesight_tui.tui.screens.help import HelpScreen

    def shown(svg: str) -> str:
        return re.sub(r"<[^>]+>", "", svg).replace("&#160;", " ")

    app = make_app(repo, settings)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(app, pilot)
        footer = shown(app.export_screenshot()).splitlines()
        bottom = " ".join(line for line in footer if "Quit" in line)
        assert "Help" in bottom and "Ask" in bottom, bottom
        await pilot.press("f1")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        text = shown(app.export_screenshot())
        assert "app.help" not in text and "query.open" not in text and "Esc" in text


async def test_command_palette_has_every_action(repo: Path, settings: Settings) -> None:
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {
            "Open in editor",
            "Copy path:line",
            "Copy snippet",
            "Cycle search mode",
            "Filter results",
            "Re-index",
            "Keys",
        } <= titles


async def test_f4_shows_code_like_the_selected_hit(repo: Path, settings: Settings) -> None:
    (repo / "src" / "distance.py").write_text(
        "import math\n\n\ndef great_circle(lat_a, lon_a, lat_b, lon_b):\n    radius = 6371.0\n"
        "    dlat = math.radians(lat_b - lat_a)\n    dlon = math.radians(lon_b - lon_a)\n"
        "    return 2 * radius * math.asin(math.sqrt(math.sin(dlat / 2) ** 2 + math.sin(dlon / 2) ** 2))\n"
    )
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        source = app.hits[0]
        assert source.path == "src/geo.py"
        await pilot.press("f4")
        await settle(app, pilot)
        assert app.query_one("#query", Input).value == f"like: src/geo.py:{source.line}"
        assert app.hits and app.hits[0].path == "src/distance.py", [h.path for h in app.hits]
        assert not any(h.path == source.path and h.start_line <= source.line <= h.end_line for h in app.hits)
        row = str(app.query_one(ResultsList).get_option_at_index(0).prompt)  # issue 48 item 30: as search rows,
        assert f"{repo.name}:" not in row and not any(h.repo for h in app.hits)  # no repository name in front
        assert "More like this" in {c.title for c in app.get_system_commands(app.screen)}
        await search(app, pilot, "like: src/nowhere.py:3")  # typed by hand: one clear line, the app lives on
        assert app.hits == []


def test_editor_argv_syntaxes() -> None:
    from codesight_tui.tui.editor import editor_argv

    def env(ed: str) -> dict[str, str]:
        return {"EDITOR": ed}

    assert editor_argv("/r/a.py", 7, environ=env("vim")) == ["vim", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("nvim")) == ["nvim", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("emacsclient -nw")) == ["emacsclient", "-nw", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("nano")) == ["nano", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("micro")) == ["micro", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("hx")) == ["hx", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("code --wait")) == ["code", "--wait", "-g", "/r/a.py:7"]
    assert editor_argv("/r/a.py", 7, environ={"VISUAL": "nvim", "EDITOR": "nano"})[0] == "nvim"
    assert editor_argv("/r/a.py", 7, environ={}) == ["vi", "+7", "/r/a.py"]
    assert editor_argv("/r/a.py", 7, environ=env("/opt/bin/my-wrapper --x")) == [
        "/opt/bin/my-wrapper",
        "--x",
        "+7",
        "/r/a.py",
    ]
    assert editor_argv("/r/my file.py", 3, template="subl {path}:{line}") == ["subl", "/r/my file.py:3"]
    assert editor_argv("/r/a.py", 3, template="myed --line {line}") == ["myed", "--line", "3", "/r/a.py"]
    # never a shell: metacharacters stay inside one argument
    assert editor_argv("/r/$(rm -rf x);.py", 1, environ=env("vim"))[-1] == "/r/$(rm -rf x);.py"


async def test_same_hits_are_not_repainted_but_new_stale_marks_are(repo: Path, settings: Settings) -> None:
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


def test_editor_template_through_a_shell_quotes_the_path(tmp_path: Path) -> None:
    # Issue 22, fault 14: `sh -c "ed {path}"` ran `$(…)` from a file name.
    import subprocess

    from codesight_tui.tui.editor import editor_argv

    name = tmp_path / "$(touch pwned).py"
    name.write_text("x = 1\n")
    argv = editor_argv(str(name), 1, template=f"sh -c 'cat {{path}} > {tmp_path}/out.txt'")
    subprocess.run(argv, check=True, cwd=tmp_path)
    assert not (tmp_path / "pwned").exists()
    assert (tmp_path / "out.txt").read_text() == "x = 1\n"


# --- issue 20: the terminal experience -------------------------------------------------------


async def test_letters_typed_in_the_results_go_to_the_query(
    repo: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Item 6: `app.config["SECRET_KEY"]` typed into the list opened the editor (the `o`) and a `q`
    # would have quit. Letters reach the query, wherever the focus is.
    script, log = _fake_editor(tmp_path)
    monkeypatch.setenv("VISUAL", str(script))
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
        await settle(app, pilot)
        await search(app, pilot, "config")
        app.action_focus_results()
        await pilot.pause(0.05)
        assert app.focused is app.query_one(ResultsList)
        await pilot.press(*" loader.oq?jkyY")
        await settle(app, pilot)
        box = app.query_one("#query", Input)
        assert box.value == "config loader.oq?jkyY" and app.screen.focused is box
        assert not log.exists() and app.is_running  # nothing opened, nothing quit
        app.action_focus_results()
        await pilot.press("backspace")
        assert box.value == "config loader.oq?jkyY"[:-1] and app.screen.focused is box


async def test_selection_is_kept_across_refreshes(repo: Path, settings: Settings) -> None:
    # Item 3: vectors arriving re-searched and reset the highlight to #1; a user selected #2,
    # pressed Enter and got #1. The hit stays selected by identity, and a re-order is signalled.
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "config")
        results = app.query_one(ResultsList)
        assert len(app.hits) >= 3
        await pilot.press("down", "down")
        chosen = results.current
        app.run_search()  # the same query again, as when vectors arrive or the editor returns
        await settle(app, pilot)
        assert results.current is not None and chosen is not None
        assert results.current.path == chosen.path and results.current.scope == chosen.scope
        # the same query, re-ranked under the cursor: it follows the hit and says so
        reordered = [app.hits[2], app.hits[0], app.hits[1], *app.hits[3:]]
        assert results.show(reordered, set(), refresh=True)
        assert results.highlighted == 0 and results.current is reordered[0]
        assert "updated" in str(results.border_subtitle)
        # a new query starts at the top
        await search(app, pilot, "server")
        assert results.highlighted == 0


async def test_preview_is_centred_on_the_line_and_marks_the_query(tmp_path: Path, settings: Settings) -> None:
    # Item 2: at 80x24 the preview showed 6 lines above the hit and only its first line.
    root = tmp_path / "r"
    root.mkdir()
    (root / "widgets.py").write_text(
        "import functools\n\n"
        + "".join(f"# comment line {i}\n" for i in range(30))
        + "@functools.lru_cache\ndef frobnicate_the_widgets(tray):\n"
        + "".join(f"    step_{i} = {i}\n" for i in range(60))
    )
    app = make_app(root, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "frobnicate_the_widgets")
        from codesight_tui.tui.widgets.preview import CodeView

        hit = app.hits[0]
        assert hit.line == 34
        view = app.query_one(CodeView)
        await pilot.pause(0.1)
        top, height = view.scroll_offset.y, view.scrollable_content_region.height
        first = int(view._strips[0].text.split()[0])
        target_row = hit.line - first
        assert top <= target_row < top + height and abs(target_row - (top + height // 2)) <= 1
        row = view._strips[target_row]
        assert "frobnicate_the_widgets" in row.text and "▶" in row.text
        assert any(seg.style and seg.style.reverse and "frobnicate" in seg.text for seg in row)  # the query's word
        await pilot.press("shift+down")  # the preview scrolls without leaving the query
        await pilot.pause(0.05)
        assert view.scroll_offset.y == top + 3 and app.focused is app.query_one("#query")
        await pilot.press("f2")
        await pilot.pause(0.1)
        assert app.screen.has_class("-zoom")
        assert app.query_one("#preview").size.height > app.query_one("#results-pane").size.height


async def test_rows_show_location_and_name_and_scores_only_on_request(repo: Path, settings: Settings) -> None:
    # Item 5: path:line, the definition's name in full, badges; no raw fusion score by default.
    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "verify password")
        results = app.query_one(ResultsList)
        text = str(results.get_option_at_index(0).prompt)
        hit = app.hits[0]
        assert f"{hit.path}:{hit.line}" in text and "verify_password" in text and "BV" in text
        assert f"{hit.score:.4f}" not in text
        await pilot.press("alt+s")
        assert f"{hit.score:.4f}" in str(results.get_option_at_index(0).prompt)


def test_long_paths_shrink_before_the_name_does() -> None:
    from dataclasses import replace

    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.widgets.results import result_row

    path = "src/flask/sansio/scaffold/deeply/nested/app.py"
    scope = "class SecureCookieSessionInterface > def open_session"
    hit = SearchResult(path, 960, 990, scope, "python", 0.02, 1, 1, "", 1, line=966)  # found by both
    row = result_row(1, hit, width=76)
    # issue 66 item 20: the path keeps what fits beside the name's first NAME_ROOM cells (the rest
    # of the name is cut at the edge, as fzf cuts a line); only its leading folders shrink
    from codesight_tui.tui.widgets.results import NAME_ROOM

    head = row.plain[: row.plain.index(":966")]
    assert len(head) + len(":966  ") + NAME_ROOM <= 76 and head.endswith("deeply/nested/app.py")
    assert row.plain.endswith("SecureCookieSessionInterface.open_session")
    # issue 35: BM25 with the static tier's vectors is "Bv"; "BV" is BM25 with the full model's
    assert " Bv " in result_row(1, replace(hit, vector_rank=None, static_rank=3)).plain
    assert " BV " in result_row(1, replace(hit, vector_rank=2, static_rank=3)).plain


async def test_copy_says_where_the_text_went(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Item 7: under tmux's default `set-clipboard external`, "Copied" showed while nothing arrived.
    import pyperclip

    from codesight_tui.tui import opening as app_module

    def no_clipboard(text: str) -> None:
        raise pyperclip.PyperclipException("no copy mechanism")

    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    monkeypatch.setattr(app_module, "tmux_clipboard", lambda: "external")
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "haversine")
        await pilot.press("ctrl+y")
        hit = app.hits[0]
        note = app._notifications.last if hasattr(app._notifications, "last") else list(app._notifications)[-1]
        assert "Copied" not in note.message and "set -g set-clipboard on" in note.message
        assert f"{hit.path}:{hit.line}" in note.message  # the text itself is shown
        monkeypatch.setattr(app_module, "tmux_clipboard", lambda: None)
        await pilot.press("alt+y")
        note = list(app._notifications)[-1]
        assert "OSC 52" in note.message
        saved = settings.data_dir / "last-copy.txt"
        assert str(saved) in note.message and saved.read_text() == hit.content
        assert saved.stat().st_mode & 0o777 == 0o600  # issue 48 item 30: the owner's alone, as the index is


async def test_help_and_palette(repo: Path, settings: Settings) -> None:
    # Item 8: help explains every badge (S included) and spells keys one way; "Keys" once in the palette.
    from codesight_tui.tui.screens.help import HelpScreen

    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        from rich.console import Console

        with open(os.devnull, "w") as devnull:
            console = Console(width=200, record=True, file=devnull)
            for w in app.screen.query(Static):
                console.print(w.content)
        text = " ".join(console.export_text().split())  # however the console wrapped it
        assert "S" in text and "definition of the name" in text
        for spelled in ("Esc", "Tab", "Ctrl+C", "Ctrl+Y", "Alt+Y", "Enter", "F1", "Shift+Down"):
            assert spelled in text, spelled
        for wrong in ("escape", "ctrl+", "^c"):
            assert wrong not in text


async def test_status_bar_keeps_mode_filter_and_freshness_at_80_columns(repo: Path, settings: Settings) -> None:
    # Items 9 and 10.
    from rich.text import Text

    from codesight_tui.tui.widgets.status import IndexState, StatusBar

    bar = StatusBar()
    st = IndexState(
        files=1204,
        chunks=8311,
        vectors=8311,
        phase="idle",
        last_indexed=100.0,
        model="x/all-MiniLM-L6-v2",
        model_state="ready",
        mode="hybrid",
        filters="glob:tests/ lang:python",
        stale={"a", "b", "c"},
    )

    def plain(markup: str) -> str:
        return Text.from_markup(markup).plain

    text = plain(bar.render_state(st, now=112.0, width=78))
    assert "hybrid glob:tests/ lang:python" in text and "indexed 12s ago" in text and "3 stale" in text
    assert "MiniLM" not in text and len(text) <= 78
    assert "MiniLM-L6-v2" in bar.render_state(st, now=112.0, width=200)
    # while vectors are coming, never "indexed 34s ago": lexical ready, vectors N%
    st.phase, st.vectors = "embed", 500
    st.start_phase("embed", 0.0, 0)
    st.progress(500, 8311, 10.0)
    text = bar.render_state(st, now=10.0, width=200)
    assert "lexical ready · vectors 6%" in text and "indexed" not in text
    # idle with vectors missing (cancelled, or the model failed): say both
    st.phase = "idle"
    assert "vectors 6%" in bar.render_state(st, now=112.0, width=200)
    # the first pass: no "0 files · 0 chunks" while results may already be listed
    first = IndexState(phase="lexical", phase_total=500, phase_done=120)
    assert not bar.render_state(first, now=1.0, width=200).startswith("0 files")
    # issue 48 item 24: while the static model distils every hit is BM25's: not a bare "hybrid"
    first.retrievers = ("bm25",)
    assert "hybrid: bm25" in plain(bar.render_state(first, now=1.0, width=200))
    first.retrievers = ("bm25", "vector")  # the usual pair: the mode says it
    assert "hybrid:" not in plain(bar.render_state(first, now=1.0, width=200))


def test_eta_follows_the_recent_rate() -> None:
    # Item 10: the ETA rose from 4 to 8 minutes while 2.5 remained: it used the whole phase's rate.
    from codesight_tui.tui.widgets.status import IndexState

    st = IndexState(phase="embed")
    st.start_phase("embed", 0.0, 0)
    for t in range(0, 300, 10):  # a slow start: 1 chunk/s for 5 minutes ...
        st.progress(t, 10_000, float(t))
    for t in range(300, 420, 10):  # ... then 20 chunks/s
        st.progress(300 + (t - 300) * 20, 10_000, float(t))
    left = 10_000 - st.phase_done
    assert st.phase_eta(410.0) == pytest.approx(left / 20, rel=0.05)


async def test_footer_fits_80_columns(repo: Path, settings: Settings) -> None:
    from textual.widgets import Footer

    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        footer = app.query_one(Footer)
        width = sum(w.outer_size.width for w in footer.children)
        assert width <= 80, width


async def test_punctuation_query_shows_no_results(repo: Path, settings: Settings) -> None:
    # Item 13.
    app = make_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "!!! ...")
        assert app.hits == [] and app.query_one(ResultsList).option_count == 0


async def test_several_repositories_are_searched_as_one_list(
    repo: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`codesight A B`: one ranked list, each row labelled with its repository; the preview,
    the editor and copy use the hit's own repository; each is indexed and watched."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "distance.py").write_text('def haversine_miles(a, b):\n    """Great-circle distance."""\n    return 0\n')
    embedder = HashEmbedder()
    more = CodeSight(other, settings=settings, embedder=embedder)
    app = make_app(repo, settings, embedder, more_roots=[other], more_engines=[more], watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert more.is_indexed() and app.state.files == app.engine.counts()["files"] + more.counts()["files"]
        await search(app, pilot, "haversine")
        repos = {h.repo for h in app.hits}
        assert repos == {str(repo), str(other)}
        results = app.query_one(ResultsList)
        theirs = next(i for i, h in enumerate(app.hits) if h.repo == str(other))
        results.highlighted = theirs
        await pilot.pause(0.3)
        assert "other:" in str(results.get_option_at_index(theirs).prompt)
        assert app.query_one(Preview).current is app.hits[theirs]
        copied = []
        monkeypatch.setattr(app, "_copy", lambda text, what: copied.append(text))
        await pilot.press("ctrl+y")
        assert copied == [f"{other / 'distance.py'}:1"]
        # The second repository is watched too: a new file there is found.
        (other / "more.py").write_text("def meerkat_lookup():\n    pass\n")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            await pilot.pause(0.2)
            if any(h.path == "more.py" for h in more.search("meerkat_lookup", mode="bm25")):
                break
        else:
            pytest.fail("a change in the second repository was not indexed")


async def test_alt_keys_as_tmux_sends_them_act_and_type_nothing(repo: Path, settings: Settings) -> None:
    """Issue 35, item 7: under tmux, Alt+S and Alt+Y arrive as ESC and the letter, which Textual
    parses as a printable ``alt+s`` whose character is ``s``: the focused query box typed it."""
    from textual._xterm_parser import XTermParser

    def keys_from_terminal(data: str) -> list[Key]:
        parser = XTermParser()
        events = list(parser.feed(data))
        time.sleep(0.2)  # past the escape delay, as the driver's parser would wait
        found = events + list(parser.tick())
        keys = [e for e in found if isinstance(e, Key)]
        assert len(keys) == len(found), found  # a terminal's keys, nothing else
        return keys

    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "verify password")
        query = app.query_one("#query", Input)
        assert app.focused is query
        results = app.query_one(ResultsList)
        hit = app.hits[0]
        for event in keys_from_terminal("\x1bs"):
            assert event.is_printable  # what the Input would have typed
            app.post_message(event)
        await pilot.pause(0.1)
        assert query.value == "verify password"
        assert f"{hit.score:.4f}" in str(results.get_option_at_index(0).prompt)
        for event in keys_from_terminal("\x1by"):
            app.post_message(event)
        await pilot.pause(0.1)
        assert query.value == "verify password" and app.clipboard == hit.content


async def test_a_late_search_answer_after_the_screen_is_gone_is_no_crash(repo: Path, settings: Settings) -> None:
    """Issue 48 item 31: an answer that lands once the app's widgets are gone (it was closing)
    found no #query and raised NoMatches out of the handler."""
    engine = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    app = CodeSightApp(repo, engine=engine, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
    app._search_finished(SearchFinished(("verify", "hybrid", "", ""), [], 1.0))  # no exception
    assert not app._search_running


def test_the_preview_lexes_from_above_a_window_that_starts_in_a_string(tmp_path: Path) -> None:
    """Issue 48 item 22: a window opening inside a docstring was lexed as one long string, hit
    included (148 of 1,083 definitions in rich/)."""
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.widgets.preview import render_hit

    doc = "".join(f"    line {i} of a long docstring that explains the module\n" for i in range(80))
    body = (
        'def first():\n    """\n'
        + doc
        + '    """\n    return 1\n\n\ndef render_lines(lines, width):\n    return [l[:width] for l in lines]\n'
    )
    (tmp_path / "mod.py").write_text(body)
    target = body.split("\n").index("def render_lines(lines, width):") + 1
    hit = SearchResult("mod.py", target, target + 1, "def render_lines", "python", 1.0, 1, None, "", 1, line=target)
    _, strips, row = render_hit(tmp_path, hit, terms=())
    def_seg = next(seg for seg in strips[row] if seg.text.strip() == "def")
    doc_seg = next(seg for seg in strips[row - 6] if "docstring" in seg.text)
    assert def_seg.style != doc_seg.style  # a keyword, not more of the string


def test_a_window_far_down_is_lexed_from_the_definition_above_it(tmp_path: Path) -> None:
    """Issue 66 item 23: past line 4,000 (``LEX_FROM_TOP``) the window was lexed from its own first
    line, so one that opened inside a docstring drew the hit in one colour (rich's render_lines
    at line 5,084). It is lexed from the nearest definition's first line above it now."""
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.widgets.preview import LEX_FROM_TOP, render_hit

    filler = "".join(f"x{i} = {i}\n" for i in range(LEX_FROM_TOP + 1000))
    doc = "".join(f"        line {i} of a long docstring that explains the method\n" for i in range(80))
    body = (
        filler + 'class Console:\n    def first(self):\n        """\n' + doc + '        """\n        return 1\n\n'
        "    def render_lines(self, lines, width):\n        return [l[:width] for l in lines]\n"
    )
    (tmp_path / "mod.py").write_text(body)
    lines = body.split("\n")
    target = lines.index("    def render_lines(self, lines, width):") + 1
    hit = SearchResult("mod.py", target, target + 1, "def render_lines", "python", 1.0, 1, None, "", 1, line=target)
    anchors = [lines.index("class Console:") + 1, lines.index("    def first(self):") + 1, target]

    def styles(strips: list[Strip], row: int) -> tuple[Style | None, Style | None]:
        def_seg = next(seg for seg in strips[row] if seg.text.strip() == "def")
        doc_seg = next(seg for seg in strips[row - 6] if "docstring" in seg.text)
        return def_seg.style, doc_seg.style

    _, strips, row = render_hit(tmp_path, hit, terms=(), anchors=anchors)
    keyword, string = styles(strips, row)
    assert keyword != string  # a keyword, not more of the string
    _, strips, row = render_hit(tmp_path, hit, terms=())  # without them, as before: one string, no keyword
    assert not any(seg.text.strip() == "def" for seg in strips[row])


async def test_f5_f6_follow_the_code_and_back_returns(nav_repo: Path, settings: Settings) -> None:
    """Issue 51: F6 lists a hit's callees, F5 a hit's callers, the breadcrumb says the way here, and
    Alt+Left goes back to the list before with its row selected; Enter opens the editor at the line."""
    app = make_app(nav_repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "lookup")
        start = [h.path for h in app.hits].index("app/service.py")
        app.query_one(ResultsList).highlighted = start
        await pilot.press("f6")
        await settle(app, pilot)
        assert app.query_one("#query", Input).value.startswith("callees: app/service.py:")
        assert [(h.path, h.line, h.name) for h in app.hits] == [
            ("app/service.py", 4, "make_cache"),
            ("store/cache.py", 14, "LRUCache.put"),
            ("store/cache.py", 10, "LRUCache.get"),
        ]
        trail = app.query_one("#trail")
        assert trail.display and '"lookup" › callees of lookup' in str(trail.render())
        await pilot.press("f5")  # who calls make_cache: lookup, at line 9
        await settle(app, pilot)
        assert [(h.path, h.line, h.name) for h in app.hits] == [("app/service.py", 9, "lookup")]
        assert "› callees of lookup › callers of make_cache" in str(trail.render())
        from codesight_tui.tui.editor import editor_argv

        hit = app.hits[0]  # Enter opens the caller's line
        assert editor_argv(str(nav_repo / hit.path), hit.line, environ={"EDITOR": "vim"})[1] == "+9"
        await pilot.press("alt+left")
        await settle(app, pilot)
        await pilot.press("alt+left")
        await settle(app, pilot)
        assert app.query_one("#query", Input).value == "lookup" and app.query_one(ResultsList).highlighted == start
        assert not trail.display
        assert {"Callers", "Callees", "Back"} <= {b.description for b in app.BINDINGS}


def test_a_callee_the_repository_does_not_define_keeps_its_name() -> None:
    """Issue 66 item 14: F6 on awkTokenizer showed `src/tokenizer.go:162 (not defined here)` with no
    name (the list read "len" as a keyword and dropped it); the CLI said `len line 162`."""
    from codesight_tui.core.search.navigate import Navigation, Site
    from codesight_tui.tui.navigation import navigation_hits

    nav = Navigation(
        "callees",
        "awkTokenizer",
        "awkTokenizer",
        None,
        sites=[
            Site("src/tokenizer.go", 162, "len", "call", "", None, None, "built-in"),
            Site("src/tokenizer.go", 170, "helper", "call", "", None, None, "not defined here"),
        ],
    )
    assert [h.name for h in navigation_hits(nav)] == ["len() (built-in)", "helper() (not defined here)"]


def test_paths_shrink_only_where_they_do_not_fit_and_a_hit_without_a_name_shows_its_code() -> None:
    """Issue 66 item 20: at 100 columns every folder was cut to its first letter
    (`d/d/d/t/dependencies/index.md`) where the whole path fitted, and a hit with no definition
    name showed nothing after `utils.py:48`."""
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.widgets.results import result_row

    path = "docs/de/docs/tutorial/dependencies/index.md"
    hit = SearchResult(
        path,
        3,
        9,
        "Dependencies - First Steps in a Long Heading",
        "markdown",
        1.0,
        1,
        None,
        "# Dependencies\n",
        1,
        line=3,
    )
    assert f" {path}:3" in result_row(1, hit, width=100).plain
    narrow = result_row(1, hit, width=50).plain
    assert "dependencies/index.md:3" in narrow and narrow.index("dependencies") < 40
    bare = SearchResult("utils.py", 48, 50, "", "python", 1.0, 1, None, "\n    return cache.get(key)\n", 2, line=48)
    assert result_row(2, bare, width=80).plain.endswith("utils.py:48  return cache.get(key)")


def test_the_breadcrumb_always_says_the_way_back() -> None:
    """Issue 66 item 20: at 160 columns a long trail cut "back" off `Alt+←`."""
    from codesight_tui.tui.navigation import BACK_HINT, trail_text

    steps = ['"how does routing work"'] + [f"callers of handler_number_{k}" for k in range(8)]
    for width in (60, 80, 160):
        line = trail_text(steps, width).plain
        assert line.endswith(BACK_HINT) and len(line) <= max(width, 8 + len(BACK_HINT))
        assert "callers of handler_number_7" in line
    assert trail_text(steps[:2], 160).plain == '"how does routing work" › callers of handler_number_0' + BACK_HINT


async def test_the_config_keymap_remaps_keys_and_help_shows_the_keys_in_force(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 67 item 6: a ``[keymap]`` table in config.toml remaps any binding by its id (as
    posting's does); F1 lists the keys in force; a remap that names no binding, or takes a key
    another binding has, is said in one line, and nothing else changes."""
    from textual.widgets import Static

    from codesight_tui.core.config import load_settings
    from codesight_tui.tui.screens.filter import FilterScreen
    from codesight_tui.tui.screens.help import HelpScreen

    config = tmp_path / "config.toml"
    config.write_text('[keymap]\napp.filter = "f7"\n"app.help" = "f9"\napp.hlep = "f8"\napp.zoom_preview = "ctrl+r"\n')
    monkeypatch.setenv("CODESIGHT_CONFIG", str(config))
    mapped = load_settings(data_dir=settings.data_dir, cache_dir=settings.cache_dir)
    assert mapped.keymap == {"app.filter": "f7", "app.help": "f9", "app.hlep": "f8", "app.zoom_preview": "ctrl+r"}
    app = make_app(repo, mapped)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        told = [n.message for n in app._notifications]
        assert "keymap: no key binding is called 'app.hlep' (F1 lists the ids)" in told
        assert "keymap: ctrl+r is app.reindex's key too; app.zoom_preview takes it" in told
        await pilot.press("ctrl+f")  # the old key does nothing now
        await pilot.pause(0.1)
        assert not isinstance(app.screen, FilterScreen)
        await pilot.press("f7")
        await pilot.pause(0.1)
        assert isinstance(app.screen, FilterScreen)
        await pilot.press("escape")
        await pilot.pause(0.1)
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f9")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        from rich.console import Console

        with open(os.devnull, "w") as devnull:
            console = Console(width=200, record=True, file=devnull)
            console.print(app.screen.query_one("#help-table", Static).content)
        rows = {line.split()[-1]: line for line in console.export_text().splitlines() if line.strip()}
        assert rows["app.filter"].split()[0] == "F7" and rows["app.help"].split()[0] == "F9"
        assert rows["app.ask"].split()[0] == "F3"  # not remapped: as it was


async def test_exact_and_regex_modes_list_matching_lines_by_file(repo: Path, settings: Settings) -> None:
    """Issue 68 item 5: Ctrl+G switches the query box among a question, an exact string and a
    regex; the mode is in the status bar; hits are lines grouped by file with a count; the preview
    marks the matches; navigation works from a grep hit."""
    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g")
        assert app.kind == "exact" and "exact" in str(app.query_one("#status", StatusBar).render_state(app.state))
        await search(app, pilot, "def ")
        assert app.hits and all(h.found_by == "grep" and "def " in h.match_text for h in app.hits)
        assert all(h.spans for h in app.hits)
        rows = [str(app.query_one(ResultsList).get_option_at_index(i).prompt) for i in range(len(app.hits))]
        first = app.hits[0].path
        n = sum(1 for h in app.hits if h.path == first)
        assert f"{first} ({n})" in rows[0] or f"({n})" in rows[0], rows[0]
        if n > 1:
            assert "↳" in rows[1] and first not in rows[1]
        await pilot.press("ctrl+g")
        assert app.kind == "regex"
        await search(app, pilot, r"def \w+\(")
        assert app.hits and all(h.found_by == "grep" for h in app.hits)
        preview = app.query_one(Preview)
        assert preview.current is app.hits[0]
        await search(app, pilot, "def (")  # an unfinished regex: said, and the app goes on
        assert not app.hits
        await pilot.press("tab")  # back to a question
        assert app.kind == "question" and app.mode in ("bm25", "hybrid", "vector")


async def test_a_long_list_of_lines_is_listed_a_screen_first_and_the_rest_between_repaints() -> None:
    """Measuring a thousand rows held the event loop for about 190 ms: the first rows are listed at
    once, the rest in batches after each repaint, and a newer list stops an older one's batches."""
    from textual.app import App, ComposeResult

    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.tui.widgets import results as results_mod

    def lines(n: int, name: str) -> list[SearchResult]:
        return [
            SearchResult(
                f"src/{name}{i // 7}.py", i, i, "", "python", 0.0, None, None, f"x = f{i}()", 0, line=i, spans=((4, 6),)
            )
            for i in range(1, n + 1)
        ]

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield ResultsList()

    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        listed = app.query_one(ResultsList)
        listed.show(lines(1000, "a"), set())
        assert listed.option_count == results_mod.FIRST_ROWS  # a screen and more, at once
        for _ in range(100):
            await pilot.pause()
            if listed.option_count == 1000:
                break
        assert listed.option_count == 1000
        assert "f1000()" in str(listed.get_option_at_index(999).prompt)
        assert "src/a142.py (" in str(listed.get_option_at_index(993).prompt)  # a file's first line, late
        listed.show(lines(1000, "b"), set())
        listed.show(lines(30, "c"), set())  # the next key's answer, before b's batches ran
        for _ in range(10):
            await pilot.pause()
        assert listed.option_count == 30 and "c0.py" in str(listed.get_option_at_index(0).prompt)


async def test_a_file_level_hit_has_its_own_marker_and_opens_at_the_top(tmp_path: Path, settings: Settings) -> None:
    from codesight_tui.tui.widgets.preview import render_hit

    repo = tmp_path / "r"
    fns = "".join(f"pub fn route_{k}(route: &str) -> bool {{\n    route.len() > {k}\n}}\n\n" for k in range(40))
    (repo / "src" / "routing").mkdir(parents=True)
    (repo / "src" / "routing" / "mod.rs").write_text("//! The router: routes and their handlers.\nmod table;\n\n" + fns)
    (repo / "src" / "routing" / "table.rs").write_text(fns)
    app = make_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "how does routing work")
        hit = app.hits[0]
        assert (hit.path, hit.grain, hit.line) == ("src/routing/mod.rs", "module", 1) and len(hit.parts) > 1
        row = str(app.query_one(ResultsList).get_option_at_index(0).prompt)
        assert "src/routing/mod.rs:1  ▤ module" in row and f"{len(hit.parts)} places" in row
        assert all(h.grain == "chunk" for h in app.hits[1:])
        title, strips, target = render_hit(repo, hit)
        assert "▤ module root" in title.plain and target == 0  # the file's first line
        assert f"{len(hit.parts)} places: {', '.join(str(a) for a, _ in sorted(hit.parts))}" in title.plain
        far = max(a for a, _ in hit.parts)  # a chunk it holds, marked in the gutter where the window shows it
        assert far > 1
        if far <= len(strips):
            assert "▌" in "".join(seg.text for seg in strips[far - 1])
