"""Hybrid retrieval: BM25 (SQLite FTS5) and vector similarity (LanceDB) fused by Reciprocal Rank
Fusion. Every result keeps its rank in each retriever, so the caller can show why it was found."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from codesight_tui.core.fusion import (
    RELEVANCE_FLOOR,
    STATIC_FADE,
    STATIC_KNOWN_WORDS,
    STATIC_RELEVANCE_FLOOR,
    rrf_fuse,
)
from codesight_tui.core.languages import DOCUMENT_LANGUAGES
from codesight_tui.core.modes import checked_mode
from codesight_tui.core.text import fts_query, query_terms
from codesight_tui.core.translations import PROSE, language_segment, preference, preferred_language

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from codesight_tui.core.index.static import StaticIndex
    from codesight_tui.core.search.ranking import Retriever, VectorsFn
    from codesight_tui.core.search.related import RelatedSource
    from codesight_tui.core.store.store import ChunkRow, Store
    from codesight_tui.core.store.vectors import VectorStore


@dataclass(slots=True)
class SearchResult:
    """One hit. Lines are 1-based and inclusive; ranks are 1-based, None where not retrieved."""

    path: str
    start_line: int
    end_line: int
    scope: str
    language: str
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    content: str
    chunk_id: int
    definition: bool = False  # the query names what this chunk defines
    line: int = 0  # where to open it: the definition's own line, else the first line with a query word
    repo: str = ""  # the repository's root, set when several repositories are searched at once
    static_rank: int | None = None  # rank in the static tier's list (core.index.static)
    page: int | None = None  # a PDF hit's page (its first line's)
    slide: int | None = None  # a PPTX hit's slide
    commit: str = ""  # a fleet hit's commit (core.fleet); repo is then the repository's name there
    translations: int = 0  # the same page in other languages, folded into this hit (core.translations)

    @property
    def name(self) -> str:
        """The scope as a reader names it: ``class Flask > def url_for`` -> ``Flask.url_for``; a
        document's scope (``slide 4: Plan``, ``Design > Retries``) as it is."""
        if self.language in DOCUMENT_LANGUAGES:
            return self.scope
        return short_scope(self.scope)

    @property
    def is_document(self) -> bool:
        """A PDF, DOCX or PPTX hit: its lines are those of the extracted text."""
        return self.language in DOCUMENT_LANGUAGES

    @property
    def location(self) -> str:
        """Where a person finds it: ``src/app.py:42``, ``spec.pdf p.12``, ``deck.pptx slide 4``."""
        if self.page is not None:
            return f"{self.path} p.{self.page}"
        if self.slide is not None:
            return f"{self.path} slide {self.slide}"
        if self.language == "docx" and self.scope:  # Word has no stable pages: its heading
            return f"{self.path} § {self.scope.rsplit(' > ', 1)[-1]}"
        return f"{self.path}:{self.line or self.start_line}"

    @property
    def found_by(self) -> str:
        """``both`` (BM25 and a vector list), ``bm25``, ``vector`` (the full model), ``static``
        (the static tier alone), or ``symbol`` (a definition no retriever ranked)."""
        dense = self.vector_rank or self.static_rank
        if self.bm25_rank and dense:
            return "both"
        if self.bm25_rank:
            return "bm25"
        if self.vector_rank:
            return "vector"
        if self.static_rank:
            return "static"
        return "symbol" if self.definition else "bm25"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SearchResponse(list[SearchResult]):
    """What ``CodeSight.search`` (and ``related``, ``search_many``) return: the hits, best first
    (it is the list of ``SearchResult``), with the notices that belong to this answer (what it
    lacks, such as BM25 only or no model, and what happened to the index since the last call)
    and the retrievers whose lists were fused (``bm25``, ``static``, ``vector``)."""

    def __init__(
        self, hits: Iterable[SearchResult] = (), notices: list[str] | None = None, retrievers: list[str] | None = None
    ) -> None:
        super().__init__(hits)
        self.notices: list[str] = list(notices or [])
        self.retrievers: list[str] = list(retrievers or [])  # the lists fused: bm25, static, vector

    @property
    def hits(self) -> list[SearchResult]:
        """The hits as a plain list."""
        return list(self)


class Searcher(Protocol):
    """What answers a search: one repository's index (``CodeSight``), a fleet store (``Fleet``),
    or several together (``core.repo.retrieval.search_many``). ``query``, ``top_k`` and ``mode`` first;
    the keywords each takes (``glob``, ``language``, ``like`` ...) are its own."""

    def search(self, query: str, *args: Any, **kwargs: Any) -> SearchResponse: ...


class RepoSearcher(Searcher, Protocol):
    """A repository's ``Searcher``: it has a root, and finds the chunk a "more like this" starts
    from (``CodeSight``)."""

    @property
    def root(self) -> Path: ...

    def related_source(self, target: str) -> RelatedSource: ...


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
        return self.vector_store.search(vector, depth, language=language)

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        return self.vector_store.vectors(ids)

    def get_chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        return self.store.get_chunks(ids)

    def scope_matches(self, name: str, limit: int = 400) -> list[tuple[int, str, int, str]]:
        return self.store.scope_matches(name, limit)


def _filtered(store: Store, ids: list[int], glob: str | None, language: str | None) -> list[int]:
    """``ids`` whose chunk passes the path and language filters (vector lists are over-fetched
    and filtered here: LanceDB and the static matrix know neither)."""
    from codesight_tui.core.store.store import path_matches

    rows = store.get_chunks(ids)
    return [
        i
        for i in ids
        if i in rows
        and (not glob or path_matches(rows[i].path, glob))
        and (not language or rows[i].language == language)
    ]


def search(
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
    vectors_for: Callable[[list[ChunkRow]], dict[int, np.ndarray]] | None = None,
    static: tuple[StaticIndex, float] | None = None,
    used: list[str] | None = None,
    vector_query: str | None = None,
    static_query_vector: np.ndarray | None = None,
) -> list[SearchResult]:
    """Run one query. ``query_vector_fn`` embeds it (hybrid and vector modes, where the index has
    vectors); ``vectors_for(rows)`` gives stored vectors by id (default: from ``vectors``); ``static``
    is ``(StaticIndex, coverage)``: in hybrid a third list, weighted by its coverage and the share the
    full model has not embedded; ``used`` collects the lists fused; ``vector_query`` is what the
    vector lists embed instead (a chunk's code, for "more like this"), ``static_query_vector`` a
    static vector as it is. ``vector`` returns the vector ranking; ``hybrid`` and ``bm25`` run the
    ranking stack (``ranking="plain"``: RRF alone). Nothing lexical and nothing near: no results."""
    checked_mode(mode)
    if not query or not any(ch.isalnum() for ch in query):
        return []  # blank or punctuation only: nothing to look for, not arbitrary neighbours
    depth = max(depth, top_k)
    retriever = LocalRetriever(store, vectors)
    stack = mode in ("hybrid", "bm25") and ranking == "stack"
    rankings: dict[str, list[int]] = {}
    nearest = None
    n_vectors = vectors.count() if mode in ("hybrid", "vector") and query_vector_fn is not None else 0
    coverage = store.vector_coverage() if n_vectors else 0.0
    if n_vectors:  # beside BM25, in a second thread (see _nearest)
        assert query_vector_fn is not None
        fetch = depth * 10 if glob else depth
        nearest = _pool().submit(_nearest, retriever, query_vector_fn, vector_query or query, fetch, language)
    static_index, static_weight = _static_weight(static if mode == "hybrid" else None, coverage)
    static_found: Future[tuple[np.ndarray, list[tuple[int, float]]]] | None = None
    if static_weight > 0:  # the static list too is found beside BM25 (a matrix product that releases the GIL)
        assert static_index is not None
        fetch = depth * 10 if glob or language else depth
        static_found = _pool().submit(_static_nearest, static_index, static_query_vector, vector_query or query, fetch)
    if mode in ("hybrid", "bm25"):
        rankings["bm25"] = retriever.bm25(query, depth, language=language, glob=glob)
    static_vector, near_static, nothing = _take_static(
        static_found, static_index, rankings, bool(n_vectors), query, store, glob, language, depth
    )
    if nothing:
        return []  # as below: nothing lexical, nothing near
    query_vector = None
    if nearest is not None:
        query_vector, nothing = _take_vector(nearest, rankings, mode, query, near_static, store, glob, depth)
        if nothing:
            return []
    if used is not None:
        used.extend(name for name in ("bm25", "static", "vector") if name in rankings)
    return fuse_and_rank(
        retriever,
        rankings,
        query,
        top_k=top_k,
        stack=stack,
        merge=stack or (mode == "vector" and ranking == "stack"),
        rrf_k=rrf_k,
        glob=glob,
        language=language,
        coverage=coverage,
        query_vector=query_vector,
        vectors_for=vectors_for or (lambda rows: retriever.vectors([r.id for r in rows])),
        static_weight=static_weight,
        static_vector=static_vector,
        static_vectors_for=(lambda rows: static_index.vectors([r.id for r in rows]))
        if static_vector is not None and static_index is not None
        else None,
        locate=store.locate,
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
) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """The query's vector from the full model, and its nearest chunks. Both release the GIL, so
    they run in a second thread while SQLite answers BM25 in the first: a hybrid query costs the
    slower of the two. A path filter cannot run inside LanceDB: with a glob the caller over-fetches
    (``fetch``) and filters."""
    qv = embed(text)
    return qv, retriever.nearest(qv, fetch, language=language)


def _static_nearest(
    index: StaticIndex, given: np.ndarray | None, text: str, fetch: int
) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """The query's static vector (``given``, or the static model's of ``text``), and its nearest."""
    sv = given if given is not None else index.model.encode_query(text)
    return sv, index.nearest(sv, fetch)


def _take_static(
    found_later: Future[tuple[np.ndarray, list[tuple[int, float]]]] | None,
    index: StaticIndex | None,
    rankings: dict[str, list[int]],
    full_vectors: bool,
    query: str,
    store: Store,
    glob: str | None,
    language: str | None,
    depth: int,
) -> tuple[np.ndarray | None, bool, bool]:
    """The static tier's list, filtered, into ``rankings``: ``(its query vector, whether its nearest
    is near enough, whether the answer is nothing)``: nothing lexical and nothing near (where the
    static tier would be all there is, most of the query's words must be ones it knows)."""
    if found_later is None:
        return None, False, False
    vector, found = found_later.result()
    floor = index.model.relevance_floor if index is not None else STATIC_RELEVANCE_FLOOR
    near = bool(found) and found[0][1] >= floor
    if near and not rankings.get("bm25") and not full_vectors:  # the static tier would be all there is
        assert index is not None
        near = index.model.known_share(query_terms(query)) >= STATIC_KNOWN_WORDS
    if not rankings.get("bm25") and not full_vectors and not near:
        return vector, near, True
    ids = [cid for cid, _ in found]
    rankings["static"] = (_filtered(store, ids, glob, language) if glob or language else ids)[:depth]
    return vector, near, False


def _take_vector(
    nearest: Future[tuple[np.ndarray, list[tuple[int, float]]]],
    rankings: dict[str, list[int]],
    mode: str,
    query: str,
    near_static: bool,
    store: Store,
    glob: str | None,
    depth: int,
) -> tuple[np.ndarray, bool]:
    """The full model's list, filtered, into ``rankings``: ``(the query's vector, whether the
    answer is nothing)``: nothing matches lexically and even the nearest vector is far, so a
    nonsense query (punctuation, random words) gets no results rather than arbitrary neighbours."""
    query_vector, hits = nearest.result()
    ids = [cid for cid, _ in hits]
    if glob:
        ids = _filtered(store, ids, glob, None)
    rankings["vector"] = ids[:depth]
    lexical_none = not rankings.get("bm25") if mode == "hybrid" else fts_query(query) is None
    nothing = lexical_none and not near_static and (not hits or 1.0 - hits[0][1] < RELEVANCE_FLOOR)
    return query_vector, nothing


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
) -> list[SearchResult]:
    """The one fusion and ranking behind every search, a local index's and a fleet store's: the
    retrievers' ``rankings`` (``bm25``, ``static``, ``vector``: chunk ids, best first) fused by RRF
    under the ranking stack (``core.search.ranking.rerank``; with ``stack=False`` plain RRF), the windows
    of one definition merged into one hit (``merge``), and each hit's target line set. ``origin``
    gives a chunk's ``(repo, commit)`` where the chunks come from several repositories (a fleet):
    windows merge only within one repository. ``locate`` gives a document line's page or slide."""
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
        )
    else:
        fused = [(cid, s, r, False) for cid, s, r in rrf_fuse(rankings, k=rrf_k)]
    rows = retriever.get_chunks([cid for cid, *_ in fused[: top_k * (4 if merge else 2)]])
    results: list[SearchResult] = []
    pages = _Translations()
    for cid, score, ranks, is_def in fused:
        row = rows.get(cid)
        if row is None:  # vector of a chunk removed since (or beyond what was fetched): skip it
            continue
        repo, commit = origin(cid) if origin is not None else ("", "")
        if merge and _merge_within(results, row, repo):
            continue
        hit = SearchResult(
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
            repo=repo,
            static_rank=ranks.get("static"),
            commit=commit,
        )
        if pages.fold(results, hit):
            continue
        results.append(hit)
        if len(results) >= top_k:
            break
    set_target_lines(results, query)
    if locate is not None:
        _set_pages(results, locate)
    return results


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


_KEYWORDS = re.compile(r"^(?:[a-z_]+\s+)+(?=[^\s])")


def short_scope(scope: str | None) -> str:
    """``class Flask > def url_for`` -> ``Flask.url_for``; ``impl Display for Foo`` -> ``Display for Foo``:
    the names without the keywords that introduce them."""
    parts = []
    for segment in (scope or "").split(" > "):
        names = [_KEYWORDS.sub("", label.strip()) or label.strip() for label in segment.split(", ")]
        parts.append(", ".join(n for n in names if n))
    return ".".join(p for p in parts if p)


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
