"""core.workspace (issue 50): one engine per root made with the process's options, one index job
and one watcher per root, the search policy in one place, and a reload when the config changes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import HashEmbedder, build_repo, wait_for

from codesight_tui.core.apps.workspace import EngineOptions, Workspace
from codesight_tui.core.config import Settings
from codesight_tui.core.engine import CodeSight
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.modes import Vectors
from codesight_tui.core.search.contract import ModelState, SearchRequest


def test_one_engine_per_root_made_with_the_options(repo: Path) -> None:
    ws = Workspace(EngineOptions(lexical_processes=True, resident_bm25=True))
    cs = ws.engine(repo)
    assert ws.engine(repo) is cs and ws.engines() == [cs] and ws.roots() == [repo]
    assert cs.context.lexical_processes and cs.context.resident_bm25 and not cs.models.in_child
    mine = CodeSight(build_repo(repo.parent / "other"), embedder=HashEmbedder())
    assert ws.adopt(mine) is mine and ws.engine(mine.root) is mine
    ws.close()
    assert ws.engines() == []


@pytest.mark.parametrize(
    ("choice", "device", "injected", "static", "full"),
    [
        ("auto", "cpu", False, "auto", False),
        ("auto", "cuda", False, "auto", True),
        ("auto", "cpu", True, "auto", True),
        ("auto", "cpu", False, "off", True),
        ("on", "cpu", False, "auto", True),
        ("off", "cuda", False, "auto", False),
        ("off", "cpu", True, "off", False),
    ],
)
def test_the_full_pass_runs_where_full_model_says(
    repo: Path, settings: Settings, choice: str, device: str, injected: bool, static: str, full: bool
) -> None:
    """Issue 49: the full model's pass is on by default only where it runs on a GPU, was handed in,
    or is the only semantic tier (the static one off); the Workspace's index jobs (the TUI's,
    MCP's) follow it."""
    s = settings.model_copy(
        update={"full_model": choice, "device": device, "embedding_backend": "torch", "static_model": static}
    )
    cs = CodeSight(repo, settings=s, embedder=HashEmbedder() if injected else None)
    assert cs.models.full_pass() is full and cs.full_pass() is full
    ws = Workspace()
    assert ws.adopt(cs) is cs and ws.job(repo).embed is None  # each run asks the engine (issue 66)
    ws.close()


def test_a_changed_stamp_makes_the_engines_afresh(repo: Path) -> None:
    stamp = [1]
    ws = Workspace(reload_on=lambda: stamp[0])
    first = ws.engine(repo)
    assert ws.engine(repo) is first
    stamp[0] = 2
    assert ws.engine(repo) is not first


def test_one_job_per_root_and_a_search_of_what_it_indexed(repo: Path, settings: Settings) -> None:
    ws = Workspace()
    ws.adopt(CodeSight(repo, settings=settings, embedder=HashEmbedder()))
    job, started = ws.start_index(repo)
    assert started and ws.job(repo) is job and ws.job_of(repo) is job
    assert job.finished.wait(120) and job.error is None and ws.running(repo) is None
    hits = ws.search(SearchRequest("haversine", "bm25", limit=3), [repo])
    assert hits[0].path == "src/geo.py" and hits[0].repo == str(repo)
    assert [s.repo for s in hits.repos] == [str(repo)] and hits.repos[0].indexed and hits.mode == "bm25"
    like = ws.search(SearchRequest("", "bm25", limit=3, like="src/geo.py"), [repo])
    assert all(h.path != "src/geo.py" for h in like)
    assert [h.path for h in ws.engine(repo).related("src/geo.py", 3, "bm25")] == [h.path for h in like]
    store = str(repo.parent / "no-store-yet")
    assert ws.fleet(store) is ws.fleet(store) and ws.fleet(store, "http://127.0.0.1:9") is not ws.fleet(store)
    status = ws.status(repo, check_disk=False)
    assert status["indexed"] and status["files"] == ws.engine(repo).counts()["files"] and status["changed"] is None
    with pytest.raises(CodeSightError, match="nothing to search"):
        ws.search(SearchRequest("x"), [])


def test_the_static_answer_falls_back_to_the_full_model_where_it_cannot_be_given(
    repo: Path, settings: Settings
) -> None:
    ws = Workspace()
    cs = ws.adopt(CodeSight(repo, settings=settings, embedder=HashEmbedder(), static_model="off"))
    cs.index()
    wanted = SearchRequest("distance between two points", tier=Vectors.STATIC)
    answer = ws.search(wanted, [repo])
    assert answer.tier is Vectors.LOAD and "vector" in answer.retrievers  # no static tier here
    assert answer.repos[0].model is ModelState.USED and not answer.gaps
    assert ws.search(replace(wanted, mode="bm25"), [repo]).tier is Vectors.LOAD


def test_one_watcher_per_root(repo: Path, settings: Settings) -> None:
    ws = Workspace()
    ws.adopt(CodeSight(repo, settings=settings, embedder=HashEmbedder()))
    watcher = ws.watch(repo, lambda cs: cs.watch(embed=False))
    assert ws.watch(repo) is watcher and ws.watching(repo)
    (repo / "src" / "fresh.py").write_text("def brand_new_symbol():\n    return 1\n")
    assert wait_for(
        lambda: any(h.path == "src/fresh.py" for h in ws.search(SearchRequest("brand_new_symbol", "bm25"), [repo])),
        timeout=30,
    )
    assert ws.unwatch(repo) is watcher and not watcher.running and not ws.watching(repo)
    assert ws.unwatch(repo) is None
    ws.close()


def test_the_request_is_a_value(tmp_path: Path) -> None:
    request = SearchRequest("q")
    assert request.tier is Vectors.LOAD and request.limit == 10 and request.like is None
    with pytest.raises(AttributeError):
        request.query = "other"  # type: ignore[misc]
