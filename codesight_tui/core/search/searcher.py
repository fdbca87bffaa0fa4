"""Hybrid retrieval: BM25 and vector lists fused by Reciprocal Rank Fusion, under the ranking stack.
Every step before fusion runs once, here (``retrieve``), for every store: a local index (SQLite and
LanceDB: ``LocalRetriever``) and a fleet store (``core.fleet.store.FleetQuery``) answer only BM25,
nearest neighbours and chunks by id. Every result keeps its rank in each list, so the caller can
show why it was found."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from codesight_tui.core.fusion import (
    RELEVANCE_FLOOR,
    STATIC_FADE,
    STATIC_KNOWN_WORDS,
    rrf_fuse,
)
from codesight_tui.core.languages import DOCUMENT_LANGUAGES
from codesight_tui.core.modes import Mode, checked_mode
from codesight_tui.core.search.contract import MODULE_GRAIN, Cancel, SearchResult, check
from codesight_tui.core.text import fts_query, query_terms
from codesight_tui.core.translations import PROSE, language_segment, preference, preferred_language

if TYPE_CHECKING:
    import numpy as np

    from codesight_tui.core.index.static import StaticIndex
    from codesight_tui.core.search.ranking import LinksFn, Retriever, VectorsFn
    from codesight_tui.core.search.related import RelatedSource
    from codesight_tui.core.store.store import ChunkRow, Store
    from codesight_tui.core.store.vectors import VectorStore


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()  # the service's threads may ask for it at once: one pool, never two


def _pool() -> ThreadPoolExecutor:
    """The process's one pool for the vector lists a search runs beside BM25."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="codesight-vector")
        return _POOL


class LocalRetriever:
    """A local index as a ``core.search.ranking.Retriever``: BM25 and chunks from SQLite (``Store``), the
    full model's nearest neighbours and stored vectors from LanceDB (``VectorStore``)."""

    def __init__(self, store: Store, vectors: VectorStore) -> None:
        self.store, self.vector_store = store, vectors

    def bm25(self, query: str, depth: int, *, language: str | None = None, glob: str | None = None) -> list[int]:
        return self.store.bm25(query, depth, language=language, glob=glob)

    def nearest(self, vector: np.ndarray, depth: int, *, language: str | None = None) -> list[tuple[int, float]]:
        """``(chunk id, cosine similarity)``, nearest first (LanceDB gives distances)."""
        return [(cid, 1.0 - d) for cid, d in self.vector_store.nearest(vector, depth, language=language)]

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        return self.vector_store.vectors(ids)

    def get_chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        return self.store.get_chunks(ids)

    def scope_matches(self, name: str, limit: int = 400) -> list[tuple[int, str, int, str]]:
        return self.store.scope_matches(name, limit)


Found = tuple["np.ndarray", list[tuple[int, float]]]  # a query's vector, and its nearest (id, cosine)


@dataclass(frozen=True, slots=True)
class NearestList:
    """A vector list fused beside BM25: the full model's (``vector``) or the static tier's
    (``static``). ``find(fetch)`` gives the query's vector and its ``fetch`` nearest chunks,
    ``(id, cosine)`` best first; it runs in a second thread while BM25 runs in the first.
    ``floor``: the cosine under which the nearest is not near. ``known_share``: the share of the
    query's words the model knows, asked where this list would be all there is (the static tier's
    words are its vocabulary). ``filters_language``: its nearest are of the asked language already
    (else it over-fetches and the rows are filtered)."""

    name: str
    find: Callable[[int], Found]
    floor: float
    known_share: Callable[[list[str]], float] | None = None
    filters_language: bool = False


@dataclass(frozen=True, slots=True)
class Retrieved:
    """The lists a query found (``rankings``: chunk ids, best first, by list name) and the query
    vectors the ranking stack compares hits with."""

    rankings: dict[str, list[int]]
    query_vector: np.ndarray | None = None
    static_vector: np.ndarray | None = None


def _blank(query: str) -> bool:
    """Blank or punctuation only: nothing to look for, not arbitrary neighbours."""
    return not query or not any(ch.isalnum() for ch in query)


def retrieve(
    retriever: Retriever,
    query: str,
    *,
    mode: Mode,
    depth: int,
    glob: str | None = None,
    language: str | None = None,
    full: NearestList | None = None,
    static: NearestList | None = None,
    bm25_filters_paths: bool = True,
    cancel: Cancel | None = None,
) -> Retrieved | None:
    """Every step before fusion, for every store: the blank query refused; the vector lists
    started beside BM25 (over-fetched where a filter runs after them); BM25 (``bm25`` and
    ``hybrid``); the relevance floors and the known-word gate; the filters. None where the answer
    is nothing: nothing lexical and nothing near, so a nonsense query (punctuation, random words)
    gets no results rather than arbitrary neighbours."""
    if _blank(query):
        return None
    check(cancel)

    def fetch(near: NearestList) -> int:
        return depth * 10 if glob or (language and not near.filters_language) else depth

    full_found = _pool().submit(full.find, fetch(full)) if full is not None else None
    static_found = _pool().submit(static.find, fetch(static)) if static is not None else None
    rankings: dict[str, list[int]] = {}
    if mode in ("hybrid", "bm25"):
        if bm25_filters_paths:
            rankings["bm25"] = retriever.bm25(query, depth, language=language, glob=glob)
        else:
            found = retriever.bm25(query, depth * 10 if glob else depth, language=language)
            rankings["bm25"] = _filtered(retriever, found, glob, None)[:depth] if glob else found
    check(cancel)
    static_vector, near_static = None, False
    if static is not None and static_found is not None:
        static_vector, near_static, nothing = _take_static(
            static, static_found, rankings, full is not None, query, retriever, glob, language, depth
        )
        if nothing:
            return None
    query_vector = None
    if full is not None and full_found is not None:
        query_vector, nothing = _take_full(
            full, full_found, rankings, mode, query, near_static, retriever, glob, language, depth
        )
        if nothing:
            return None
    check(cancel)
    return Retrieved(rankings, query_vector, static_vector)


def _filtered(retriever: Retriever, ids: list[int], glob: str | None, language: str | None) -> list[int]:
    """``ids`` whose chunk passes the path and language filters (vector lists are over-fetched
    and filtered here: LanceDB and the static matrix know no paths)."""
    from codesight_tui.core.store.store import path_matches

    rows = retriever.get_chunks(ids)
    return [
        i
        for i in ids
        if i in rows
        and (not glob or path_matches(rows[i].path, glob))
        and (not language or rows[i].language == language)
    ]


def _take_static(
    near: NearestList,
    found_later: Future[Found],
    rankings: dict[str, list[int]],
    full_vectors: bool,
    query: str,
    retriever: Retriever,
    glob: str | None,
    language: str | None,
    depth: int,
) -> tuple[np.ndarray, bool, bool]:
    """The static tier's list, filtered, into ``rankings``: ``(its query vector, whether its nearest
    is near enough, whether the answer is nothing)``: nothing lexical and nothing near (where the
    static tier would be all there is, most of the query's words must be ones it knows)."""
    vector, found = found_later.result()
    is_near = bool(found) and found[0][1] >= near.floor
    alone = not rankings.get("bm25") and not full_vectors  # the static tier would be all there is
    if is_near and alone and near.known_share is not None:
        is_near = near.known_share(query_terms(query)) >= STATIC_KNOWN_WORDS
    if alone and not is_near:
        return vector, is_near, True
    ids = [cid for cid, _ in found]
    lang = None if near.filters_language else language
    rankings[near.name] = (_filtered(retriever, ids, glob, lang) if glob or lang else ids)[:depth]
    return vector, is_near, False


def _take_full(
    near: NearestList,
    found_later: Future[Found],
    rankings: dict[str, list[int]],
    mode: str,
    query: str,
    near_static: bool,
    retriever: Retriever,
    glob: str | None,
    language: str | None,
    depth: int,
) -> tuple[np.ndarray, bool]:
    """The full model's list, filtered, into ``rankings``: ``(the query's vector, whether the
    answer is nothing)``: nothing matches lexically and even the nearest vector is far."""
    query_vector, hits = found_later.result()
    ids = [cid for cid, _ in hits]
    lang = None if near.filters_language else language
    if glob or lang:
        ids = _filtered(retriever, ids, glob, lang)
    rankings[near.name] = ids[:depth]
    lexical_none = not rankings.get("bm25") if mode == "hybrid" else fts_query(query) is None
    nothing = lexical_none and not near_static and (not hits or hits[0][1] < near.floor)
    return query_vector, nothing


def local_search(
    store: Store,
    vectors: VectorStore,
    query_vector_fn: Callable[[str], np.ndarray] | None,
    query: str,
    *,
    top_k: int = 10,
    mode: str = "hybrid",
    glob: str | None = None,
    language: str | None = None,
    depth: int = 20,
    rrf_k: int = 60,
    ranking: str = "stack",
    vectors_for: VectorsFn | None = None,
    static: tuple[StaticIndex, float] | None = None,
    used: list[str] | None = None,
    vector_query: str | None = None,
    static_query_vector: np.ndarray | None = None,
    cancel: Cancel | None = None,
) -> list[SearchResult]:
    """Run one query over a local index. ``query_vector_fn`` embeds it (hybrid and vector modes,
    where the index has vectors); ``vectors_for(rows)`` gives stored vectors by id (default: from
    ``vectors``); ``static`` is ``(StaticIndex, coverage)``: in hybrid a third list, weighted by its
    coverage and the share the full model has not embedded; ``used`` collects the lists fused;
    ``vector_query`` is what the vector lists embed instead (a chunk's code, for "more like
    this"), ``static_query_vector`` a static vector as it is. ``vector`` returns the vector
    ranking; ``hybrid`` and ``bm25`` run the ranking stack (``ranking="plain"``: RRF alone)."""
    checked = checked_mode(mode)
    if _blank(query):
        return []
    depth = max(depth, top_k)
    retriever = LocalRetriever(store, vectors)
    stack = checked in ("hybrid", "bm25") and ranking == "stack"
    text = vector_query or query
    full = None
    coverage = 0.0
    if checked in ("hybrid", "vector") and query_vector_fn is not None and vectors.count():
        coverage = store.vector_coverage()
        full = _full_list(retriever, query_vector_fn, text, language)
    static_index, static_weight = _static_weight(static if checked == "hybrid" else None, coverage)
    static_list = _static_list(static_index, static_query_vector, text) if static_weight > 0 else None
    found = retrieve(
        retriever, query, mode=checked, depth=depth, glob=glob, language=language,
        full=full, static=static_list, cancel=cancel,
    )  # fmt: skip
    if found is None:
        return []
    if used is not None:
        used.extend(name for name in ("bm25", "static", "vector") if name in found.rankings)
    return fuse_and_rank(
        retriever,
        found.rankings,
        query,
        top_k=top_k,
        stack=stack,
        merge=stack or (checked == "vector" and ranking == "stack"),
        rrf_k=rrf_k,
        glob=glob,
        language=language,
        coverage=coverage,
        query_vector=found.query_vector,
        vectors_for=vectors_for or (lambda rows: retriever.vectors([r.id for r in rows])),
        static_weight=static_weight,
        static_vector=found.static_vector,
        static_vectors_for=(lambda rows: static_index.vectors([r.id for r in rows]))
        if found.static_vector is not None and static_index is not None
        else None,
        locate=store.locate,
        file_head=store.file_head,
        links=store.file_links,
    )


def _full_list(
    retriever: LocalRetriever, embed: Callable[[str], np.ndarray], text: str, language: str | None
) -> NearestList:
    """The full model's list over LanceDB (which filters by language itself)."""
    return NearestList(
        "vector", lambda n: _nearest(retriever, embed, text, n, language), RELEVANCE_FLOOR, filters_language=True
    )


def _static_list(index: StaticIndex | None, given: np.ndarray | None, text: str) -> NearestList | None:
    """The static tier's list over its in-memory matrix, gated by the words its model knows."""
    if index is None:
        return None
    return NearestList(
        "static",
        lambda n: _static_nearest(index, given, text, n),
        index.model.relevance_floor,
        known_share=index.model.known_share,
    )


def _static_weight(static: tuple[StaticIndex, float] | None, coverage: float) -> tuple[StaticIndex | None, float]:
    """The static tier and its list's weight: its own coverage, faded as the full model's vectors
    cover the index (they leave it less to add)."""
    if static is None:
        return None, 0.0
    index, static_coverage = static
    return index, static_coverage * (1.0 - coverage) ** STATIC_FADE


def _nearest(
    retriever: LocalRetriever, embed: Callable[[str], np.ndarray], text: str, fetch: int, language: str | None
) -> Found:
    """The query's vector from the full model, and its nearest chunks. Both release the GIL, so
    they run in a second thread while SQLite answers BM25 in the first: a hybrid query costs the
    slower of the two."""
    qv = embed(text)
    return qv, retriever.nearest(qv, fetch, language=language)


def _static_nearest(index: StaticIndex, given: np.ndarray | None, text: str, fetch: int) -> Found:
    """The query's static vector (``given``, or the static model's of ``text``), and its nearest."""
    sv = given if given is not None else index.model.encode_query(text)
    return sv, index.nearest(sv, fetch)


def fuse_and_rank(
    retriever: Retriever,
    rankings: dict[str, list[int]],
    query: str,
    *,
    top_k: int,
    stack: bool = True,
    merge: bool = True,
    rrf_k: int = 60,
    glob: str | None = None,
    language: str | None = None,
    coverage: float = 1.0,
    query_vector: np.ndarray | None = None,
    vectors_for: VectorsFn | None = None,
    static_weight: float = 0.0,
    static_vector: np.ndarray | None = None,
    static_vectors_for: VectorsFn | None = None,
    origin: Callable[[int], tuple[str, str]] | None = None,
    locate: Callable[[str, int], tuple[str, int] | None] | None = None,
    file_head: Callable[[str], ChunkRow | None] | None = None,
    links: LinksFn | None = None,
) -> list[SearchResult]:
    """The one fusion and ranking behind every search, a local index's and a fleet store's: the
    retrievers' ``rankings`` (``bm25``, ``static``, ``vector``: chunk ids, best first) fused by RRF
    under the ranking stack (``core.search.ranking.rerank``; with ``stack=False`` plain RRF), the windows
    of one definition merged into one hit (``merge``), and each hit's target line set. ``origin``
    gives a chunk's ``(repo, commit)`` where the chunks come from several repositories (a fleet):
    windows merge only within one repository. ``locate`` gives a document line's page or slide.
    ``file_head`` gives a file's first chunk: with it, a short question that names a file or a
    folder gets file-level hits (``SearchResult.grain``), each holding its file's chunks. ``links``
    gives the names files define and use (``Store.file_links``), for the ranking's step 8."""
    if stack:
        from codesight_tui.core.search.ranking import rerank

        fused = rerank(
            retriever,
            rankings,
            query,
            rrf_k=rrf_k,
            glob=glob,
            language=language,
            coverage=coverage,
            query_vector=query_vector,
            vectors_for=vectors_for,
            static_weight=static_weight,
            static_vector=static_vector,
            static_vectors_for=static_vectors_for,
            links=links,
        )
    else:
        fused = [(cid, s, r, False) for cid, s, r in rrf_fuse(rankings, k=rrf_k)]
    rows = retriever.get_chunks([cid for cid, *_ in fused[: top_k * (4 if merge else 2)]])
    results: list[SearchResult] = []
    pages = _Translations()
    files = _FileHits(query, file_head) if stack and file_head is not None else None
    for cid, score, ranks, is_def in fused:
        row = rows.get(cid)
        if row is None:  # vector of a chunk removed since (or beyond what was fetched): skip it
            continue
        repo, commit = origin(cid) if origin is not None else ("", "")
        whole = files.whole(row) if files is not None else None
        if whole is False or (whole is None and merge and _merge_within(results, row, repo)):
            continue  # a chunk that a file-level hit now holds, or one that continues a hit listed
        hit = _as_hit(row, cid, score, ranks, is_def, (repo, commit))
        if whole is not None and files is not None:
            hit = files.add(whole, hit)
        elif pages.fold(results, hit):
            continue
        results.append(hit)
        if len(results) >= top_k:
            break
    set_target_lines([r for r in results if r.grain != MODULE_GRAIN], query)  # a module's root opens at its top
    if locate is not None:
        _set_pages(results, locate)
    return results


def _as_hit(
    row: ChunkRow, cid: int, score: float, ranks: dict[str, int], is_def: bool, origin: tuple[str, str]
) -> SearchResult:
    """Chunk ``cid`` as a hit, with its fused score, the ranks its lists gave it, and its ``(repo,
    commit)``."""
    return SearchResult(
        row.path,
        row.start_line,
        row.end_line,
        row.scope or "",
        row.language or "",
        round(score, 6),
        ranks.get("bm25"),
        ranks.get("vector"),
        row.content,
        cid,
        is_def,
        repo=origin[0],
        static_rank=ranks.get("static"),
        commit=origin[1],
    )


class _FileHits:
    """File-level hits for one query: the first chunk of a file that the question names (or whose
    folder it names, for the folder's root) becomes a hit for the whole file, and the file's later
    chunks fold into it (``parts``). A module's root opens at its top, with its first chunk's lines
    and text (a hit carries its lines' text, and a whole file can be megabytes); a named file, at
    its best chunk."""

    def __init__(self, query: str, head: Callable[[str], ChunkRow | None]) -> None:
        from codesight_tui.core.search.ranking import file_grain

        self.grain = file_grain(query)
        self.head = head
        self.listed: dict[str, SearchResult] = {}

    def whole(self, row: ChunkRow) -> tuple[str, ChunkRow | None] | Literal[False] | None:
        """``(grain, the file's first chunk where it opens at its top)`` for the first chunk of a
        file the question names; False for a later one, now held by the file's hit (its lines
        added to the hit's ``parts``); None for a chunk that is a hit of its own."""
        grain = self.grain(row.path, row.language) if self.grain is not None else None
        if grain is None:
            return None
        listed = self.listed.get(row.path)
        if listed is not None:
            listed.parts = (*listed.parts, (row.start_line, row.end_line))
            return False
        if grain != MODULE_GRAIN:
            return grain, None
        first = self.head(row.path)
        return None if first is None else (grain, first)  # None: removed since it was ranked

    def add(self, whole: tuple[str, ChunkRow | None], best: SearchResult) -> SearchResult:
        """The file as one hit, with its best chunk's scores and ranks."""
        grain, first = whole
        hit = replace(best, grain=grain, parts=((best.start_line, best.end_line),))
        if first is not None:
            hit.start_line, hit.end_line, hit.line = first.start_line, first.end_line, first.start_line
            hit.scope, hit.content, hit.chunk_id, hit.definition = first.scope or "", first.content, first.id, False
        self.listed[best.path] = hit
        return hit


def _set_pages(results: list[SearchResult], locate: Callable[[str, int], tuple[str, int] | None]) -> None:
    """A document hit's page or slide, from its target line."""
    for r in results:
        if r.language in DOCUMENT_LANGUAGES:
            where = locate(r.path, r.line or r.start_line)
            if where is not None and where[0] in ("page", "slide"):
                setattr(r, where[0], where[1])


class _Translations:
    """One answer's translated pages (``core.translations``): the first hit of a page stands for
    it at its rank; a hit of the same page in another language is counted into it, and takes its
    place where it is in the reader's language."""

    def __init__(self) -> None:
        self.preferred = preferred_language()
        self.seen: dict[tuple[str, str], tuple[SearchResult, str]] = {}  # (repo, page) -> (its hit, its code)

    def fold(self, results: list[SearchResult], hit: SearchResult) -> bool:
        if hit.language not in PROSE:
            return False
        found = language_segment(hit.path)
        page, code = found if found is not None else (hit.path, "")
        kept = self.seen.get((hit.repo, page))
        if kept is None:
            self.seen[hit.repo, page] = (hit, code)
            return False
        first, first_code = kept
        if first_code == code:
            return False  # another part of the same page
        first.translations += 1
        if preference(code, self.preferred) < preference(first_code, self.preferred):
            hit.score, hit.translations = first.score, first.translations
            results[results.index(first)] = hit
            self.seen[hit.repo, page] = (hit, code)
        return True


def _merge_within(results: list[SearchResult], row: ChunkRow, repo: str) -> bool:
    """``merge_into`` among the hits of ``row``'s repository (all of them for one repository)."""
    if all(r.repo == repo for r in results):
        return merge_into(results, row)
    group = [r for r in results if r.repo == repo]
    if not merge_into(group, row):
        return False
    kept = {id(r) for r in group}  # what a growing hit swallowed leaves the whole list too
    results[:] = [r for r in results if r.repo != repo or id(r) in kept]
    return True


def set_target_lines(results: list[SearchResult], query: str) -> None:
    """Each hit's ``line``: for a definition the query names, the line that defines it (not the
    decorator or comment block above it); otherwise the first line holding a word of the query.
    The chunk's first line where neither is found."""
    from codesight_tui.core.search.ranking import analyze, declaring_line

    q = analyze(query)
    names = [i.split(".")[-1] for i in q.identifiers]
    name_res = [re.compile(rf"(?<![\w$]){re.escape(n)}(?![\w$])") for n in names if n]
    words = sorted({w for w in q.words if len(w) > 2}, key=len, reverse=True)
    for r in results:
        lines = r.content.split("\n")
        found = None
        if r.definition and name_res:
            found = declaring_line(lines, name_res)
        if found is None and words:
            low = [ln.lower() for ln in lines]
            if r.language in DOCUMENT_LANGUAGES:
                found = _best_prose_line(low, words)
            else:
                found = next((k for k, ln in enumerate(low) if any(w in ln for w in words)), None)
        r.line = r.start_line + (found or 0)


def _best_prose_line(lines: list[str], words: list[str]) -> int | None:
    """In a document's text, the line holding the most of the query's words (the first of those
    that tie), where a word also counts in another form (``types`` on a line with ``type``): the
    first line holding any word is often a passing mention above the passage that answers."""
    forms = [(w, w[:-1] if w.endswith("s") and len(w) > 3 else w) for w in words]
    best, best_n = None, 0
    for k, ln in enumerate(lines):
        n = sum(1 for w, stem in forms if w in ln or stem in ln)
        if n > best_n:
            best, best_n = k, n
    return best


def _top_scope(scope: str | None) -> str:
    return (scope or "").split(" > ")[0]


def _touches(a: SearchResult | ChunkRow, b: SearchResult | ChunkRow) -> bool:
    return (
        a.path == b.path
        and _top_scope(a.scope) == _top_scope(b.scope)
        and a.start_line <= b.end_line + 1
        and b.start_line <= a.end_line + 1
    )


def _absorb(r: SearchResult, row: SearchResult | ChunkRow) -> None:
    """Extend ``r`` by the lines of ``row`` (a chunk or result) it does not cover yet."""
    old = r.content.split("\n")
    new = row.content.split("\n")
    if row.end_line > r.end_line:
        old += new[len(new) - (row.end_line - r.end_line) :]
    if row.start_line < r.start_line:
        old = new[: r.start_line - row.start_line] + old
    r.content = "\n".join(old)
    r.start_line, r.end_line = min(r.start_line, row.start_line), max(r.end_line, row.end_line)


def _same_definition(r: SearchResult, row: SearchResult | ChunkRow) -> bool:
    """Windows of one long definition: same file, same innermost scope naming one definition."""
    return (
        r.path == row.path
        and bool(r.scope)
        and r.scope == (row.scope or "")
        and ", " not in r.scope.rsplit(" > ", 1)[-1]
    )


def merge_into(results: list[SearchResult], row: ChunkRow) -> bool:
    """Fold a lower-ranked chunk into a better hit it continues (same file, same top-level scope,
    overlapping or touching lines): one definition is one result, not five in a row. A hit that
    grows until it touches a later hit swallows that one too. A window of a long definition that
    does not touch its better-ranked window is dropped: that definition is already listed."""
    for r in results:
        if _same_definition(r, row) and not _touches(r, row):
            return True
    for i, r in enumerate(results):
        if not _touches(r, row):
            continue
        _absorb(r, row)
        j = i + 1
        while j < len(results):
            if _touches(r, results[j]):
                _absorb(r, results.pop(j))
                j = i + 1
            else:
                j += 1
        return True
    return False


LIKE_ROOM = 4  # a "more like this" asks for this many more: the source and what overlaps it are left out


def without_source(
    hits: list[SearchResult], source: RelatedSource, limit: int, root: str | None = None
) -> list[SearchResult]:
    """A "more like this" answer: ``hits`` without the source chunk and what overlaps it, cut to
    ``limit``. ``root``: the repository the hits are of (None: each hit's ``repo``, a fleet's)."""
    kept = [h for h in hits if not source.overlaps(h.repo if root is None else root, h.path, h.start_line, h.end_line)]
    return kept[:limit]
