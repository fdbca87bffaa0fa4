"""Hybrid retrieval: BM25 (SQLite FTS5) and vector similarity (LanceDB) fused by Reciprocal Rank
Fusion. Every result keeps its rank in each retriever, so the caller can show why it was found."""

from __future__ import annotations

from dataclasses import asdict, dataclass

MODES = ("hybrid", "bm25", "vector")


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

    @property
    def found_by(self) -> str:
        """``both``, ``bm25`` or ``vector``."""
        if self.bm25_rank and self.vector_rank:
            return "both"
        return "bm25" if self.bm25_rank else "vector"

    def to_dict(self) -> dict:
        return asdict(self)


def rrf_fuse(rankings: dict[str, list[int]], k: int = 60) -> list[tuple[int, float, dict[str, int]]]:
    """Reciprocal Rank Fusion: ``score(d) = sum over retrievers of 1 / (k + rank(d))``.

    Returns ``(id, score, {retriever: rank})`` sorted by score, ties broken by best single rank.
    """
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for name, ids in rankings.items():
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(cid, {})[name] = rank
    order = sorted(scores, key=lambda c: (-scores[c], min(ranks[c].values())))
    return [(c, scores[c], ranks[c]) for c in order]


def search(store, vectors, query_vector_fn, query: str, *, top_k: int = 10, mode: str = "hybrid",
           glob: str | None = None, language: str | None = None, depth: int = 20,
           rrf_k: int = 60) -> list[SearchResult]:
    """Run one query. ``query_vector_fn(query)`` embeds the query; it is only called in the
    ``hybrid`` and ``vector`` modes, and only if the index holds vectors."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    if not query or not query.strip():
        return []
    depth = max(depth, top_k)
    rankings: dict[str, list[int]] = {}
    if mode in ("hybrid", "bm25"):
        rankings["bm25"] = store.bm25(query, depth, language=language, glob=glob)
    if mode in ("hybrid", "vector") and query_vector_fn is not None and vectors.count():
        qv = query_vector_fn(query)
        # A path filter cannot run inside LanceDB, so over-fetch and filter here.
        hits = vectors.search(qv, depth * 10 if glob else depth, language=language)
        ids = [cid for cid, _ in hits]
        if glob:
            from codesight_tui.core.store import path_matches

            rows = store.get_chunks(ids)
            ids = [i for i in ids if i in rows and path_matches(rows[i].path, glob)]
        rankings["vector"] = ids[:depth]
    fused = rrf_fuse(rankings, k=rrf_k)
    rows = store.get_chunks([cid for cid, _, _ in fused[: top_k * 2]])
    results: list[SearchResult] = []
    for cid, score, ranks in fused:
        row = rows.get(cid)
        if row is None:  # vector of a chunk removed since: skip it
            continue
        results.append(SearchResult(
            row.path, row.start_line, row.end_line, row.scope or "", row.language or "", round(score, 6),
            ranks.get("bm25"), ranks.get("vector"), row.content, cid,
        ))
        if len(results) >= top_k:
            break
    return results
