"""Snapshot tests (pytest-textual-snapshot) of the main screens, with a fixed clock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import HashEmbedder
from textual.pilot import Pilot
from textual.widgets import Input

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.tui.app import CodeSightApp
from codesight_tui.tui.messages import IndexProgress, ModelFailed

SIZE = (100, 30)


def app_for(root: Path, settings: Settings, **kw: Any) -> CodeSightApp:
    engine = CodeSight(root, settings=settings, embedder=HashEmbedder())
    return CodeSightApp(root, engine=engine, watch=False, clock=lambda: 1_000_000.0, **kw)


async def _settle(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, CodeSightApp)
    for box in app.query(Input):  # a blinking cursor would make each picture depend on timing
        box.cursor_blink = False
    for _ in range(400):
        await pilot.pause(0.05)
        if app.index_idle.is_set() and not app._indexing and not app.search_busy:
            await app.workers.wait_for_complete()
            await pilot.pause(0.1)
            return


def test_empty_repository(snap_compare: Callable[..., bool], tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    assert snap_compare(app_for(root, settings), terminal_size=SIZE, run_before=_settle)


def test_results(snap_compare: Callable[..., bool], repo: Path, settings: Settings) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press(*"verify password")
        await _settle(pilot)

    assert snap_compare(app_for(repo, settings), terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Callable[..., bool], repo: Path, settings: Settings) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("f1")
        await pilot.pause(0.2)

    assert snap_compare(app_for(repo, settings), terminal_size=SIZE, run_before=run_before)


def test_indexing_in_progress(snap_compare: Callable[..., bool], repo: Path, settings: Settings) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, CodeSightApp)
        app.state.files, app.state.chunks = 1204, 8311
        app.post_message(IndexProgress("embed", 5153, 8311))
        await pilot.pause(0.2)

    assert snap_compare(app_for(repo, settings, auto_index=False), terminal_size=SIZE, run_before=run_before)


def test_model_failed(snap_compare: Callable[..., bool], repo: Path, settings: Settings) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        pilot.app.post_message(ModelFailed("cannot load embedding model 'missing-model': not found"))
        await pilot.press(*"haversine")
        await _settle(pilot)

    assert snap_compare(app_for(repo, settings), terminal_size=SIZE, run_before=run_before)


def test_callers_at_80x24(snap_compare: Callable[..., bool], nav_repo: Path, settings: Settings) -> None:
    """Issue 51: the callers of a hit (F5) in the results list, with the breadcrumb, at 80x24."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press(*"make_cache")
        await _settle(pilot)
        await pilot.press("f5")
        await _settle(pilot)

    assert snap_compare(app_for(nav_repo, settings), terminal_size=(80, 24), run_before=run_before)
