"""A repository's search, and several searched as one (``search_many``): the query checked, the
vector lists chosen (the full model, the static tier, or neither), the chunk a "more like this"
starts from, and what a damaged index or vector table costs an answer. The retrieval and ranking
themselves are ``core.search.searcher``'s and ``core.search.ranking``'s."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, NotHereError, UsageError, VectorStoreError
from codesight_tui.core.fusion import rrf_fuse
from codesight_tui.core.index.storage import mark
from codesight_tui.core.modes import Mode, Vectors, checked_mode
from codesight_tui.core.search.related import RelatedSource
from codesight_tui.core.search.searcher import SearchResponse, SearchResult
from codesight_tui.core.search.searcher import search as search_index
from codesight_tui.core.text import LONE_SURROGATE

if TYPE_CHECKING:
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.static import StaticIndex
    from codesight_tui.core.repo.context import RepoContext
    from codesight_tui.core.search.searcher import RepoSearcher
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


def _checked(query: str, glob: str | None, language: str | None) -> tuple[str, str | None, str | None]:
    """The arguments as the engine takes them: arguments that were not valid UTF-8 arrive with lone
    surrogates, which neither the tokenizer nor SQLite accepts (those bytes read as U+FFFD); a
    language by any name it goes by; a glob checked."""
    query = (clean(query) or "")[:MAX_QUERY_CHARS]
    glob, language = clean(glob), clean(language)
    if language:
        from codesight_tui.core.languages import normalize_language

        language = normalize_language(language)
    if glob is not None:
        check_glob(glob)
    return query, glob, language


def _query_embedder(
    ctx: RepoContext, mode: str, vectors: Vectors, notes: list[str]
) -> tuple[Callable[[str], Any] | None, bool]:
    """What embeds the query for the full model's list, or None: not wanted (bm25, the static
    tier's answer), not loaded and not to be waited for (``True`` with it: another repository's
    engine may have it), or failed to load (said in ``notes``; vector mode raises)."""
    full = mode == "vector" or (mode == "hybrid" and vectors is not Vectors.STATIC)
    if not full:
        return None, False
    if vectors is not Vectors.LOAD and ctx.models.borrow() is None:
        return None, True
    try:
        return ctx.models.embedder().encode_query, False
    except CodeSightError as exc:
        if mode == "vector":
            raise
        notes.append(f"{exc}; showing BM25 results only")
        return None, False


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


def search(
    ctx: RepoContext,
    query: str,
    top_k: int = 10,
    mode: Mode | None = None,
    *,
    glob: str | None = None,
    language: str | None = None,
    vectors: Vectors = Vectors.LOAD,
    like: RelatedSource | None = None,
) -> SearchResponse:
    """``CodeSight.search`` (which says what each argument does): the query checked, the vector
    lists chosen by ``vectors`` and what is loaded, the search run, and a damaged vector table or
    index turned into a notice, a BM25 answer, or one line."""
    if like is not None:
        query = like.terms
    mode = checked_mode(mode or ctx.settings.default_mode)
    query, glob, language = _checked(query, glob, language)
    if not ctx.has_index():
        return SearchResponse()
    if ctx.resident_bm25:
        ctx.store.keep_resident()
    notes: list[str] = []
    qfn, unloaded = _query_embedder(ctx, mode, vectors, notes)
    if unloaded and mode == "vector":
        return SearchResponse(notices=ctx.notices.take())
    # The static tier has weight 0 once the full model answers over every chunk: its vectors
    # are not even loaded then (a 341k-chunk index holds 350 MB of them).
    static = (
        ctx.models.static_index(ctx.store)
        if mode == "hybrid" and not (qfn and ctx.store.vector_coverage() >= 1.0)
        else None
    )
    used: list[str] = []
    extra: dict[str, Any] = {}
    if like is not None:
        qfn, extra = _like(ctx, like, qfn, static)
        top_k += 4  # room for the source and what overlaps it, left out below

    def run(
        query_vector_fn: Callable[[str], Any] | None, mode: str, static: tuple[StaticIndex, float] | None, **more: Any
    ) -> list[SearchResult]:
        return search_index(
            ctx.store,
            ctx.vectors,
            query_vector_fn,
            query,
            top_k=top_k,
            mode=mode,
            glob=glob,
            language=language,
            depth=ctx.settings.retriever_depth,
            rrf_k=ctx.settings.rrf_k,
            ranking=ctx.settings.ranking,
            used=used,
            static=static,
            **extra,
            **more,
        )

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
        hits = [h for h in hits if not like.overlaps(str(ctx.root), h.path, h.start_line, h.end_line)]
        hits = hits[: top_k - 4]
    return SearchResponse(hits, notices=ctx.notices.take() + notes, retrievers=used)


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


def related_many(
    engines: Sequence[RepoSearcher],
    target: str,
    top_k: int = 10,
    mode: Mode | None = None,
    *,
    fleet: Fleet | None = None,
    repo: str | None = None,
    **kwargs: Any,
) -> SearchResponse:
    """``related`` across several repositories, as one list: the target is looked up in each
    in turn (the first that has it is the source; then ``fleet``, where none has it), then
    each, and the fleet, is searched for code like it."""
    source = None
    errors: list[CodeSightError] = []
    for engine in engines:
        try:
            source = engine.related_source(target)
            break
        except CodeSightError as exc:
            errors.append(exc)
    if source is None and fleet is None and errors:
        # the answer of a repository that has the place ("no line 30") over one that has not
        raise next((e for e in errors if not isinstance(e, NotHereError)), errors[0])
    if source is None and fleet is not None:
        source = fleet.find_source(target, repo)
    more: dict[str, Any] = {"fleet": fleet, "repo": repo} if fleet is not None else {}
    return search_many(engines, "", top_k=top_k, mode=mode, like=source, **more, **kwargs)


def search_many(
    engines: Sequence[RepoSearcher],
    query: str,
    top_k: int = 10,
    mode: Mode | None = None,
    *,
    fleet: Fleet | None = None,
    repo: str | None = None,
    **kwargs: Any,
) -> SearchResponse:
    """One ranked list across several repositories and a fleet (``CodeSight.search_many`` says
    how): each searched on its own, their lists fused by rank."""
    per_repo = [engine.search(query, top_k=top_k, mode=mode, **kwargs) for engine in engines]
    labels = [str(engine.root) for engine in engines]
    if fleet is not None:
        local = {Path(label).name for label in labels}
        try:
            found = fleet.search(
                query,
                top_k=top_k + 10,
                mode=str(mode or fleet.settings.default_mode),
                repo=repo,
                glob=kwargs.get("glob"),
                language=kwargs.get("language"),
                like=kwargs.get("like"),
            )
        except CodeSightError as exc:
            if not engines:  # the fleet alone was asked: its failure is the answer
                raise
            # An unreachable or damaged store costs its own hits, never the local ones.
            found = SearchResponse([], [f"{exc} (local hits only)"])
        per_repo.append(
            SearchResponse([h for h in found if h.repo not in local][:top_k], found.notices, found.retrievers)
        )
        labels.append("")
    if len(per_repo) == 1:
        for hit in per_repo[0]:
            hit.repo = labels[0] or hit.repo
        return per_repo[0]
    hits: dict[tuple[int, int], SearchResult] = {}
    rankings: dict[str, list[tuple[int, int]]] = {}
    for n, (label, found) in enumerate(zip(labels, per_repo, strict=False)):
        rankings[str(n)] = [(n, i) for i in range(len(found))]
        for i, hit in enumerate(found):
            hit.repo = label or hit.repo
            hits[(n, i)] = hit
    fused = rrf_fuse(rankings)
    order = sorted(fused, key=lambda f: (-f[1], -hits[f[0]].score))
    for key, score, _ in order:  # the score shown is the one the list is in order of
        hits[key].score = round(score, 6)
    names = [Path(label).name if label else "fleet" for label in labels]
    return SearchResponse(
        [hits[key] for key, _, _ in order[:top_k]],
        notices=[f"{name}: {n}" for name, found in zip(names, per_repo, strict=False) for n in found.notices],
        retrievers=[r for r in ("bm25", "static", "vector") if any(r in f.retrievers for f in per_repo)],
    )
