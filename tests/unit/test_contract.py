"""The search contract (issue 67 item 2): one typed ``SearchRequest`` in, one ``SearchResponse`` out,
for every searcher, and what an answer lacks decided once, in the core."""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HashEmbedder, build_repo

from codesight_tui.core.apps.workspace import Workspace
from codesight_tui.core.config import Settings
from codesight_tui.core.engine import CodeSight
from codesight_tui.core.fleet import Fleet
from codesight_tui.core.modes import Vectors
from codesight_tui.core.repo import retrieval
from codesight_tui.core.repo.retrieval import Several
from codesight_tui.core.search import contract
from codesight_tui.core.search.contract import (
    Cancel,
    Cancelled,
    Filters,
    Lack,
    ModelState,
    RepoSearcher,
    RepoState,
    Searcher,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from codesight_tui.core.search.related import RelatedSource

ANY = re.compile(r"\bAny\b")


def _annotations(f: Callable[..., object]) -> list[str]:
    """The annotations of ``f``'s parameters and return, as written."""
    sig = inspect.signature(f)
    out = [str(p.annotation) for p in sig.parameters.values() if p.annotation is not inspect.Parameter.empty]
    return [*out, str(sig.return_annotation)]


def test_the_contract_holds_no_any() -> None:
    """No ``Any`` in a signature of the contract: the request, the response, what it lacks, and
    each searcher's ``search``."""
    searches: list[Callable[..., object]] = [
        Searcher.search,
        RepoSearcher.related_source,
        CodeSight.search,
        CodeSight.related,
        Fleet.search,
        Several.search,
        Workspace.search,
        Workspace.searcher,
        retrieval.search,
        SearchResponse.__init__,
        SearchResponse.with_hits,
        contract.gaps_of,
    ]
    written = [a for f in searches for a in _annotations(f)]
    for value in (SearchRequest, Filters, RepoState, contract.Gap, SearchResult):
        written += [str(a) for a in value.__annotations__.values()]
    assert written and not [a for a in written if ANY.search(a)]


def _conforms(cs: CodeSight, fleet: Fleet, several: Several) -> list[Searcher]:
    """mypy --strict checks these assignments: each searcher keeps the one contract."""
    repo: RepoSearcher = cs
    return [repo, fleet, several]


@pytest.fixture
def indexed(tmp_path: Path, settings: Settings) -> CodeSight:
    cs = CodeSight(build_repo(tmp_path / "repo"), settings=settings, embedder=HashEmbedder())
    cs.index()
    return cs


def test_an_answer_says_what_it_is_made_of(indexed: CodeSight) -> None:
    answer = indexed.search(SearchRequest("haversine distance", "hybrid", limit=3))
    assert answer and answer[0].path == "src/geo.py" and len(answer) <= 3
    assert answer.mode == "hybrid" and answer.tier is Vectors.LOAD and "vector" in answer.retrievers
    (state,) = answer.repos
    assert state.repo == str(indexed.root) and state.indexed and state.model is ModelState.USED
    assert state.chunks == indexed.counts()["chunks"] == state.full_vectors and state.pending == 0
    assert answer.gaps == []  # every chunk has its vector, the model answered
    lexical = indexed.search(SearchRequest("haversine", "bm25", filters=Filters(glob="src/*.py")))
    assert lexical.retrievers == ["bm25"] and lexical.repos[0].model is ModelState.NOT_WANTED
    assert all(h.path.startswith("src/") for h in lexical) and lexical.gaps == []
    # the Python API's shorthand is the same request
    assert [h.chunk_id for h in indexed.search("haversine", 3, "bm25", glob="src/*.py")] == [
        h.chunk_id for h in lexical[:3]
    ]


def test_a_cancelled_request_stops_at_its_next_step(indexed: CodeSight) -> None:
    token = Cancel()
    token.cancel()
    with pytest.raises(Cancelled):
        indexed.search(SearchRequest("haversine", cancel=token))

    class Cancels:
        """A repository whose search cancels the request: the next one is never asked."""

        root = Path("/first")
        asked: list[str] = []

        def search(self, request: SearchRequest) -> SearchResponse:
            assert request.cancel is not None
            request.cancel.cancel()
            self.asked.append("first")
            return SearchResponse()

        def related_source(self, target: str) -> RelatedSource:
            raise AssertionError("not asked")

    live = Cancel()
    with pytest.raises(Cancelled):
        Several([Cancels(), indexed]).search(SearchRequest("haversine", cancel=live))
    assert Cancels.asked == ["first"]


def test_a_cancel_token_is_safe_across_threads() -> None:
    token = Cancel()
    seen: list[bool] = []
    threads = [threading.Thread(target=lambda: seen.append(token.cancelled)) for _ in range(4)]
    token.cancel()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 4


def _answer(*states: RepoState, mode: str = "hybrid", tier: Vectors = Vectors.LOADED) -> SearchResponse:
    return SearchResponse(mode="bm25" if mode == "bm25" else "hybrid", tier=tier, repos=states)


def test_what_an_answer_lacks_is_decided_in_the_core() -> None:
    partial = RepoState("/r/app", chunks=1000, full_vectors=250, static=True, full_estimate="about 3 min")
    (gap,) = _answer(partial).gaps
    assert gap.lack is Lack.PARTIAL_VECTORS and gap.repo == "/r/app"
    assert gap.text == (
        "index incomplete: vectors cover 25% of chunks; 750 without the full model's are found by BM25 and"
        " the static tier (`codesight index --full` computes them: about 3 min here)"
    )
    running = RepoState("/r/app", chunks=1000, full_vectors=250, indexing="embed 250/1000")
    assert _answer(running).gaps[0].text.endswith("found by BM25 (indexing: embed 250/1000)")
    # a fast answer (the static tier asked for) where the full model's vectors exist
    fast = RepoState("/r/app", chunks=10, full_vectors=10, static=True)
    assert [g.lack for g in _answer(fast, tier=Vectors.STATIC).gaps] == [Lack.FULL_UNUSED]
    # bm25 lacks no vector
    assert _answer(partial, mode="bm25").gaps == []
    # the model still loading, said once for two repositories; each repository named
    loading = [
        RepoState(f"/r/{name}", chunks=4, full_vectors=4, static=True, model=ModelState.NOT_LOADED)
        for name in ("a", "b")
    ]
    assert [g.text for g in _answer(*loading).gaps] == [
        "the full model is still loading: this answer is BM25 and the static tier"
    ]
    waiting = RepoState("/r/new", indexed=False, indexing="lexical 3/40")
    texts = [g.text for g in _answer(waiting, partial).gaps]
    assert texts[0] == "new: not indexed yet (lexical 3/40); search again in a few seconds"
    assert texts[1].startswith("app: index incomplete")
    failed = RepoState("/r/app", chunks=4, model=ModelState.FAILED, model_error="no torch")
    assert [(g.lack, g.text) for g in _answer(failed).gaps] == [
        (Lack.MODEL_FAILED, "the full model could not load (no torch): BM25 answered")
    ]


def test_the_static_tier_comes_to_the_full_model_where_there_is_none(tmp_path: Path, settings: Settings) -> None:
    cs = CodeSight(build_repo(tmp_path / "repo"), settings=settings, embedder=HashEmbedder(), static_model="off")
    cs.index()
    answer = cs.search(SearchRequest("distance between two points", tier=Vectors.STATIC))
    assert answer.tier is Vectors.LOAD and "vector" in answer.retrievers
    assert cs.search(SearchRequest("x", "bm25", Vectors.STATIC)).tier is Vectors.LOAD
