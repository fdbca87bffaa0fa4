"""A repository's search, and several searched as one (``Several``): the query checked, the
vector lists chosen (the full model, the static tier, or neither), the chunk a "more like this"
starts from, and what a damaged index or vector table costs an answer. The retrieval and ranking
themselves are ``core.search.searcher``'s and ``core.search.ranking``'s."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, NotHereError, UsageError, VectorStoreError
from codesight_tui.core.fusion import rrf_fuse
from codesight_tui.core.index.storage import mark
from codesight_tui.core.modes import Mode, Vectors, checked_mode
from codesight_tui.core.search.contract import (
    Filters,
    ModelState,
    RepoState,
    SearchRequest,
    SearchResponse,
    SearchResult,
    check,
)
from codesight_tui.core.search.related import RelatedSource
from codesight_tui.core.search.searcher import LIKE_ROOM, local_search, without_source
from codesight_tui.core.text import LONE_SURROGATE

if TYPE_CHECKING:
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.static import StaticIndex
    from codesight_tui.core.repo.context import RepoContext
    from codesight_tui.core.search.contract import RepoSearcher
    from codesight_tui.core.store.store import ChunkRow

# Longer queries are cut here: a pasted file or a hostile 100 KB string gets an answer in
# milliseconds instead of minutes of identifier splitting, and no question is that long.
MAX_QUERY_CHARS = 2000


def clean(text: str | None) -> str | None:
    """``text`` with lone surrogates (arguments that were not valid UTF-8) read as U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", text) if text else text


def check_glob(glob: str) -> None:
    """A path filter that is no gitignore-style pattern is a usage error, said in one line."""
    from codesight_tui.core.store.store import path_matches

    try:
        path_matches("probe", glob)
    except Exception as exc:  # noqa: BLE001 - pathspec's errors on a bad pattern vary by version: a usage error
        raise UsageError(f"invalid path filter {glob!r}: {exc}") from None
    # pathspec reads an unclosed "[" as a literal, so "[[[" matched nothing and looked like an
    # empty answer: a bracket is a character class, and one with no "]" is a mistake.
    plain = re.sub(r"\\.", "", glob)
    depth = 0
    for ch in plain:
        if ch == "[" and depth == 0:
            depth = 1
        elif ch == "]" and depth:
            depth = 0
    if depth:
        raise UsageError(f"invalid path filter {glob!r}: a '[' with no ']' (escape it as \\[ to match it)")


def _constant(value: Any, *_args: object) -> Any:
    """``value`` whatever it is asked: a stored vector standing in for a query embedding."""
    return value


def _checked(query: str, filters: Filters) -> tuple[str, str | None, str | None]:
    """The arguments as the engine takes them: arguments that were not valid UTF-8 arrive with lone
    surrogates, which neither the tokenizer nor SQLite accepts (those bytes read as U+FFFD); a
    language by any name it goes by; a glob checked."""
    query = (clean(query) or "")[:MAX_QUERY_CHARS]
    glob, language = clean(filters.glob), clean(filters.language)
    if language:
        from codesight_tui.core.languages import normalize_language

        language = normalize_language(language)
    if glob is not None:
        check_glob(glob)
    return query, glob, language


def _query_embedder(ctx: RepoContext, mode: Mode, tier: Vectors) -> tuple[Callable[[str], Any] | None, ModelState, str]:
    """What embeds the query for the full model's list, or None, with the model's state: not
    wanted (bm25, the static tier's answer), not loaded and not to be waited for (another
    repository's engine may have it), or failed to load (vector mode raises)."""
    full = mode == "vector" or (mode == "hybrid" and tier is not Vectors.STATIC)
    if not full:
        return None, ModelState.NOT_WANTED, ""
    if tier is not Vectors.LOAD and ctx.models.borrow() is None:
        return None, ModelState.NOT_LOADED, ""
    try:
        return ctx.models.embedder().encode_query, ModelState.USED, ""
    except CodeSightError as exc:
        if mode == "vector":
            raise
        return None, ModelState.FAILED, str(exc)


def _like(
    ctx: RepoContext,
    like: RelatedSource,
    qfn: Callable[[str], Any] | None,
    static: tuple[StaticIndex, float] | None,
) -> tuple[Callable[[str], Any] | None, dict[str, Any]]:
    """A "more like this": the source's own stored vectors where this index holds them (else its
    code embedded), and its code as what the vector lists embed."""
    own = like.root == str(ctx.root)
    stored = vectors_for(ctx, ctx.store.get_chunks([like.chunk_id]).values()) if own and qfn else {}
    if like.chunk_id in stored:
        qfn = functools.partial(_constant, stored[like.chunk_id])
    static_own = static[0].vectors([like.chunk_id]).get(like.chunk_id) if own and static else None
    return qfn, {"vector_query": like.content, "static_query_vector": static_own}


def _failed(ctx: RepoContext, exc: sqlite3.DatabaseError) -> CodeSightError:
    """A search SQLite failed, in one line. Damage inside the file (a bad page) shows only when a
    query reads it: as "malformed", or as a row whose text is no longer UTF-8. It is remembered, so
    that the next `index` rebuilds instead of leaving every search to fail."""
    damaged = not isinstance(exc, sqlite3.OperationalError) or "decode" in str(exc)
    if not damaged:
        return CodeSightError(f"search failed: {str(exc).splitlines()[0][:200]}")
    mark(ctx.storage.damaged_marker)
    why = str(exc) if "decode" not in str(exc) else "a row's text is unreadable"
    return CodeSightError(
        f"the index of {ctx.root} is damaged ({why.splitlines()[0][:120]}): run"
        " `codesight index` to rebuild it (cached vectors are reused)"
    )


def tier_of(ctx: RepoContext, mode: Mode, tier: Vectors) -> Vectors:
    """What ``tier`` comes to for this index: the static tier alone (``STATIC``) only for a hybrid
    search of an index that has its vectors; else the full model, loaded (``LOAD``)."""
    if tier is Vectors.STATIC and not (mode == "hybrid" and ctx.models.static_index(ctx.store) is not None):
        return Vectors.LOAD
    return tier


def state_of(ctx: RepoContext, mode: Mode, tier: Vectors, model: ModelState, error: str, static: bool) -> RepoState:
    """This index as an answer found it (``RepoState``): its coverage by the full model's vectors,
    the model's part, and, where chunks lack them and the answer wanted them, what computes them."""
    from codesight_tui.core.repo import indexing

    if not ctx.has_index():
        return RepoState(str(ctx.root), indexed=False, model=model)
    counts = ctx.store.counts()
    lacking = counts["pending"] and mode != "bm25" and tier is not Vectors.STATIC
    full_pass = bool(lacking) and indexing.full_pass(ctx)
    return RepoState(
        str(ctx.root),
        chunks=counts["chunks"],
        full_vectors=counts["vectors"],
        static=static,
        model=model,
        model_error=error,
        full_pass=full_pass,
        full_estimate=ctx.models.full_estimate(counts["pending"]) if lacking and not full_pass else "",
        indexing="an index run is writing it" if ctx.indexing.is_set() or ctx.storage.writer_active() else "",
    )


def search(ctx: RepoContext, request: SearchRequest) -> SearchResponse:
    """``CodeSight.search``: the query checked, the tier resolved (``tier_of``), the vector lists
    chosen by it and by what is loaded, the search run, and a damaged vector table or index turned
    into a notice, a BM25 answer, or one line. The response says what the answer lacks."""
    if request.grep is not None:
        return grep(ctx, request)
    mode = checked_mode(request.mode or ctx.settings.default_mode)
    like = request.source
    if like is None and request.like is not None:
        like = related_source(ctx, request.like)
    query, glob, language = _checked(like.terms if like is not None else request.query, request.filters)
    check(request.cancel)
    if not ctx.has_index():
        return SearchResponse(
            mode=mode, tier=request.tier, repos=[state_of(ctx, mode, request.tier, ModelState.NOT_WANTED, "", False)]
        )
    if ctx.resident_bm25:
        ctx.store.keep_resident()
    tier = tier_of(ctx, mode, request.tier)
    qfn, model, error = _query_embedder(ctx, mode, tier)
    # The static tier has weight 0 once the full model answers over every chunk: its vectors
    # are not even loaded then (a 341k-chunk index holds 350 MB of them).
    static = (
        ctx.models.static_index(ctx.store)
        if mode == "hybrid" and not (qfn and ctx.store.vector_coverage() >= 1.0)
        else None
    )
    notes: list[str] = []
    used: list[str] = []
    if not (model is ModelState.NOT_LOADED and mode == "vector"):
        hits = _run(ctx, request, mode, query, glob, language, qfn, static, like, used, notes)
    else:
        hits = []
    if model is ModelState.USED and "vector" not in used:
        model = ModelState.NOT_WANTED  # loaded, but no chunk here has its vectors (or the table failed)
    state = state_of(ctx, mode, tier, model, error, static is not None)
    return SearchResponse(hits, ctx.notices.take() + notes, used, mode=mode, tier=tier, repos=[state])


def grep(ctx: RepoContext, request: SearchRequest) -> SearchResponse:
    """An exact or regex search of this repository (``core.search.grep``): every matching line,
    from the files the index names and the files changed since, each read as it is now."""
    from codesight_tui.core.search.grep import grep as matching
    from codesight_tui.core.store import grams

    if request.filters.glob is not None:
        check_glob(request.filters.glob)
    if not ctx.has_index():
        return SearchResponse(retrievers=["grep"], repos=[RepoState(str(ctx.root), indexed=False)])
    try:
        found = matching(ctx.store, ctx.root, request, ctx.settings.max_file_size, ctx.unindexed())
        hits = [h for file_hits in found for h in file_hits]
    except sqlite3.DatabaseError as exc:
        raise _failed(ctx, exc) from None
    notices = ctx.notices.take()
    if not grams.ready(ctx.store.conn):
        notices.append("no exact-search index here yet: every file was read (`codesight index` builds it)")
    return SearchResponse(hits, notices, ["grep"], repos=[RepoState(str(ctx.root))])


def _run(
    ctx: RepoContext,
    request: SearchRequest,
    mode: Mode,
    query: str,
    glob: str | None,
    language: str | None,
    qfn: Callable[[str], Any] | None,
    static: tuple[StaticIndex, float] | None,
    like: RelatedSource | None,
    used: list[str],
    notes: list[str],
) -> list[SearchResult]:
    """The local search itself (``core.search.searcher.search``), with a damaged vector table
    answered from BM25 and the static tier, and a damaged index said in one line."""
    top_k = request.limit
    extra: dict[str, Any] = {}
    if like is not None:
        qfn, extra = _like(ctx, like, qfn, static)
        top_k += LIKE_ROOM

    def run(
        query_vector_fn: Callable[[str], Any] | None, mode: str, static: tuple[StaticIndex, float] | None, **more: Any
    ) -> list[SearchResult]:
        return local_search(
            ctx.store, ctx.vectors, query_vector_fn, query, top_k=top_k, mode=mode, glob=glob,
            language=language, depth=ctx.settings.retriever_depth, rrf_k=ctx.settings.rrf_k,
            ranking=ctx.settings.ranking, used=used, static=static, cancel=request.cancel, **extra, **more,
        )  # fmt: skip

    try:
        try:
            hits = run(qfn, mode=mode, vectors_for=functools.partial(vectors_for, ctx), static=static)
        except VectorStoreError as exc:
            mark(ctx.storage.vectors_damaged_marker)
            if mode == "vector":
                raise CodeSightError(f"{exc}: run `codesight index` to rebuild it from the embedding cache") from None
            notes.append(f"{exc}; showing BM25 results until `codesight index` rebuilds it")
            used.clear()
            hits = run(None, mode="hybrid", static=static or ctx.models.static_index(ctx.store))
    except sqlite3.DatabaseError as exc:
        raise _failed(ctx, exc) from None
    if like is not None:
        hits = without_source(hits, like, request.limit, str(ctx.root))
    return hits


def related_source(ctx: RepoContext, target: str) -> RelatedSource:
    """The chunk ``target`` names: ``path:line`` (``path:line:col`` too), a file (its first
    chunk) or a symbol (its definition). Raises ``CodeSightError`` (exit code 2) with one line
    where there is none."""
    from codesight_tui.core.search.ranking import definitions
    from codesight_tui.core.search.related import find_source

    if not ctx.has_index():
        raise UsageError(f"{ctx.root} is not indexed yet: run `codesight index`")
    return find_source(ctx.store, ctx.root, clean(target) or "", definitions)


def vectors_for(ctx: RepoContext, rows: Iterable[ChunkRow]) -> dict[int, Any]:
    """Stored vectors of chunk rows, by id: from the embedding cache (a key lookup, well under
    a millisecond for a hundred rows), else from LanceDB (about 4 ms at 100,000 rows)."""
    rows = list(rows)
    out: dict[int, Any] = {}
    cache = _read_cache(ctx)
    if cache is not None:
        try:
            found = cache.get_many([r.embed_key for r in rows], touch=False)
        except Exception:  # damaged, locked or gone: LanceDB has them all  # noqa: BLE001
            ctx.search_cache = None
            found = {}
        out = {r.id: found[r.embed_key] for r in rows if r.embed_key in found}
    rest = [r.id for r in rows if r.id not in out]
    if rest:
        out.update(ctx.vectors.vectors(rest))
    return out


def _read_cache(ctx: RepoContext) -> EmbeddingCache | None:
    """The embedding cache of the model this index's vectors came from, opened for lookups
    only if its file exists (tried once per engine)."""
    if not ctx.search_cache_tried:
        ctx.search_cache_tried = True
        from codesight_tui.core.index.cache import EmbeddingCache

        path = ctx.cache_file(ctx.store.get_meta("model"))
        if path is not None:
            ctx.search_cache = EmbeddingCache.open_file(path)
    return ctx.search_cache


def query_terms(query: str) -> list[str]:
    """The words of ``query`` worth marking in a hit (names, their parts, plain words; no
    stopwords), longest first: what a preview highlights."""
    from codesight_tui.core.search.ranking import analyze

    q = analyze((clean(query) or "")[:MAX_QUERY_CHARS])
    names = {i.split(".")[-1] for i in q.identifiers}
    return sorted({t for t in names | set(q.words) if len(t) > 1}, key=lambda t: (-len(t), t))


class Several:
    """Several repositories' indexes, and a fleet store, searched as one (a ``Searcher``): each
    on its own, their lists fused by rank (the same RRF as hybrid search), each hit labelled with
    its repository (``SearchResult.repo``). Equal fused scores go to the better-scored hit.

    The fleet's hits carry their repository's name and ``commit``; a fleet repository with the
    name of a local one searched here is left to the local index, which holds the uncommitted work
    too. A "more like this" (``like``) looks for its source in each repository in turn (the first
    that has it is the source; then the fleet), then searches each for code like it."""

    def __init__(
        self, searchers: Sequence[RepoSearcher], fleet: Fleet | None = None, default_mode: Mode = "hybrid"
    ) -> None:
        self.searchers = list(searchers)
        self.fleet = fleet
        self.default_mode = default_mode

    def source(self, target: str, repo: str | None) -> RelatedSource:
        """The chunk ``target`` names: in the first repository that has it, else in the fleet.
        Where none has it, the answer of a repository that has the place ("no line 30") wins over
        one that has not."""
        errors: list[CodeSightError] = []
        for searcher in self.searchers:
            try:
                return searcher.related_source(target)
            except CodeSightError as exc:
                errors.append(exc)
        if self.fleet is not None:
            return self.fleet.find_source(target, repo)
        if errors:
            raise next((e for e in errors if not isinstance(e, NotHereError)), errors[0])
        raise UsageError("nothing to search: no repository and no fleet store")

    def search(self, request: SearchRequest) -> SearchResponse:
        if request.grep is not None:
            return self._grep(request)
        mode = checked_mode(request.mode or self.default_mode)
        request = replace(request, mode=mode)
        if request.like is not None and request.source is None:
            request = replace(request, source=self.source(request.like, request.filters.repo))
        answers: list[SearchResponse] = []
        for searcher in self.searchers:
            check(request.cancel)
            answers.append(searcher.search(request))
        labels = [str(searcher.root) for searcher in self.searchers]
        if self.fleet is not None:
            check(request.cancel)
            answers.append(self._fleet(request, {Path(label).name for label in labels}))
            labels.append("")
        if len(answers) == 1:
            for hit in answers[0]:
                hit.repo = labels[0] or hit.repo
            return answers[0]
        return _fused(answers, labels, request)

    def _grep(self, request: SearchRequest) -> SearchResponse:
        """Every matching line of each repository in turn (no ranking: lines in path order),
        ``limit`` in all."""
        hits: list[SearchResult] = []
        answers: list[SearchResponse] = []
        for searcher in self.searchers:
            check(request.cancel)
            found = searcher.search(replace(request, limit=request.limit - len(hits)))
            label = str(searcher.root)
            for hit in found:
                hit.repo = label
            hits += found
            answers.append(found)
            if len(hits) >= request.limit:
                break
        notices = [n for found in answers for n in found.notices]
        if self.fleet is not None and len(hits) < request.limit:
            local = {searcher.root.name for searcher in self.searchers}  # their working trees answered
            try:
                fleet = self.fleet.grep(replace(request, limit=request.limit - len(hits)))
            except CodeSightError as exc:
                if not self.searchers:
                    raise
                fleet = SearchResponse([], [f"{exc} (local lines only)"])
            hits += [h for h in fleet if h.repo not in local]
            notices += fleet.notices
            answers.append(fleet)
        return SearchResponse(hits, notices, ["grep"], repos=[s for found in answers for s in found.repos])

    def _fleet(self, request: SearchRequest, local: set[str]) -> SearchResponse:
        """The fleet's answer, without the repositories searched here; its failure costs its own
        hits, never the local ones (where it alone is asked, it is the answer)."""
        assert self.fleet is not None
        try:
            found = self.fleet.search(replace(request, limit=request.limit + 10))
        except CodeSightError as exc:
            if not self.searchers:
                raise
            return SearchResponse([], [f"{exc} (local hits only)"], mode=request.mode, tier=request.tier)
        return found.with_hits([h for h in found if h.repo not in local][: request.limit])


def _fused(answers: list[SearchResponse], labels: list[str], request: SearchRequest) -> SearchResponse:
    """Several answers as one list, fused by rank; each repository's notices named."""
    hits: dict[tuple[int, int], SearchResult] = {}
    rankings: dict[str, list[tuple[int, int]]] = {}
    for n, (label, found) in enumerate(zip(labels, answers, strict=False)):
        rankings[str(n)] = [(n, i) for i in range(len(found))]
        for i, hit in enumerate(found):
            hit.repo = label or hit.repo
            hits[(n, i)] = hit
    fused = rrf_fuse(rankings)
    order = sorted(fused, key=lambda f: (-f[1], -hits[f[0]].score))
    for key, score, _ in order:  # the score shown is the one the list is in order of
        hits[key].score = round(score, 6)
    names = [Path(label).name if label else "fleet" for label in labels]
    tiers = {a.tier for a in answers if a.tier is not None}
    return SearchResponse(
        [hits[key] for key, _, _ in order[: request.limit]],
        notices=[f"{name}: {n}" for name, found in zip(names, answers, strict=False) for n in found.notices],
        retrievers=[r for r in ("bm25", "static", "vector") if any(r in f.retrievers for f in answers)],
        mode=request.mode,
        tier=tiers.pop() if len(tiers) == 1 else request.tier,
        repos=[state for found in answers for state in found.repos],
    )
