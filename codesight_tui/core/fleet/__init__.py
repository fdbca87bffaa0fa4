"""The fleet: one search over many repositories, in a store that any number of readers share.

``store`` holds the tables and searches them; ``job`` fills them (``codesight fleet index``);
``Fleet``, here, is the public face that the CLI, the TUI and MCP use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.fleet.store import (
    FleetModel,
    FleetQuery,
    FleetStore,
    RepoRecord,
    StoreSpec,
    explain,
    sql_quote,
)

if TYPE_CHECKING:
    import numpy as np

    from codesight_tui.core.modes import Mode
    from codesight_tui.core.search.contract import Cancel, SearchRequest, SearchResponse, SearchResult
    from codesight_tui.core.search.related import RelatedSource
    from codesight_tui.core.search.searcher import NearestList


_ENCODERS: dict[tuple[str, str], Any] = {}


class Fleet:
    """The fleet's public face: ``Fleet("s3://bucket/codesight", endpoint=...)`` indexes
    repositories into a store (``index``), lists them (``repos``) and searches them (``search``, a
    ``Searcher``; ``core.repo.retrieval.Several`` fuses it with local indexes)."""

    def __init__(self, uri: str, endpoint: str | None = None, settings: Any = None) -> None:
        from codesight_tui.core.config import load_settings

        self.settings = settings if settings is not None else load_settings()
        self.spec = StoreSpec(uri, endpoint or self.settings.fleet_endpoint)
        self.store = FleetStore(self.spec)

    def index(
        self,
        sources: list[str],
        *,
        model: str = "static",
        address: str | None = None,
        workers: int = 0,
        progress: Callable[[str], None] | None = None,
        local: bool = False,
        gpus: float = 0.0,
    ) -> Any:
        """Index git URLs, clones or directories of clones (``core.fleet.job.run``); a
        ``FleetReport``."""
        from codesight_tui.core.fleet import job  # deferred: git, the workers and the models, for writers only

        return job.run(
            sources,
            self.spec,
            self.settings,
            kind=model,
            address=address,
            workers=workers,
            progress=progress,
            local=local,
            gpus=gpus,
        )

    def repos(self) -> list[RepoRecord]:
        return self.store.repos()

    def remove(self, names: list[str]) -> list[str]:
        """Take repositories out of the store; the names that were there."""
        there = [r.name for r in self.store.repos() if r.name in set(names)]
        self.store.forget(there)
        self.store.finish()
        return there

    def find_source(self, target: str, repo: str | None = None) -> RelatedSource:
        """The chunk ``target`` (``path:line`` or a symbol) names in the store: the start of a
        "more like this" over the fleet (``FleetStore.find_source``)."""
        try:
            return self.store.find_source(target, repo)
        except CodeSightError:
            raise
        except Exception as exc:  # the object store unreachable, a credential refused, a table damaged  # noqa: BLE001
            raise explain(exc, self.spec, "search") from None

    def size_bytes(self) -> int | None:
        return self.store.size_bytes()

    def model(self) -> FleetModel:
        """The store's model, loaded here once per process (the static one distilled first if this
        machine has none yet)."""
        meta = self.store.meta()
        kind, dim = meta.get("kind", "static"), int(meta.get("dim", "0"))
        from codesight_tui.core.process.models import model_info, static_model_path

        info = model_info(self.settings)
        if meta.get("model") != info.name:
            raise UsageError(
                f"{self.spec.uri} was built with {meta.get('model')}, and this codesight has"
                f" {info.name}: set embedding_model to match"
            )
        key = (kind, info.name)
        encoder = _ENCODERS.get(key)
        if encoder is None:
            if kind == "static":
                from codesight_tui.core.index.static import load

                encoder = load(static_model_path(self.settings, info))
            else:
                from codesight_tui.core.index.embedder import in_process

                encoder = in_process(info, self.settings.device, self.settings.batch_size)
            _ENCODERS[key] = encoder
        if int(encoder.dim) != dim:
            raise UsageError(f"{self.spec.uri} holds {dim}-dimensional vectors, and this model makes {encoder.dim}")
        return FleetModel(kind, info.name, dim, encoder)

    def grep(self, request: SearchRequest) -> SearchResponse:
        """Exact or regex search of the store's chunks (``grep_store``)."""
        return grep_store(self, request)

    def search(self, request: SearchRequest) -> SearchResponse:
        """The fleet's answer to ``request`` (a ``Searcher``): ``filters.repo`` is a glob over
        repository names; ``like`` (or ``source``, from ``find_source`` or a local
        ``CodeSight.related_source``) searches for code like that chunk instead, as a local index
        does."""
        from codesight_tui.core.modes import checked_mode
        from codesight_tui.core.search.contract import ModelState, RepoState, SearchResponse

        mode = checked_mode(request.mode or self.settings.default_mode)
        f = request.filters
        source = request.source
        if source is None and request.like is not None:
            source = self.find_source(request.like, f.repo)
        model = self.model() if mode != "bm25" else None
        try:
            hits, used, notices = ranked(
                self.store,
                request.query,
                model,
                top_k=request.limit,
                mode=mode,
                repo=f.repo,
                glob=f.glob,
                language=f.language,
                depth=self.settings.retriever_depth,
                rrf_k=self.settings.rrf_k,
                like=source,
                cancel=request.cancel,
            )
        except CodeSightError:
            raise
        except Exception as exc:  # the object store unreachable, a credential refused, a table damaged  # noqa: BLE001
            raise explain(exc, self.spec, "search") from None
        full = model is not None and model.kind == "full"
        state = RepoState(
            self.spec.uri,
            static=model is not None and model.kind == "static",
            model=ModelState.USED if full else ModelState.NOT_WANTED,
        )
        return SearchResponse(hits, notices, used, mode=mode, tier=request.tier, repos=[state])


def grep_store(fleet: Fleet, request: SearchRequest) -> SearchResponse:
    """``Fleet.grep``: every line of the store's chunks that matches, in repository, path and
    line order. A pattern in the case given narrows by its literals (the FM-index's ``contains``);
    any other pattern reads every chunk of the repositories asked. The store keeps text, not
    files: what a chunk holds is what is searched (secrets masked, as they were indexed)."""
    from codesight_tui.core.languages import normalize_language
    from codesight_tui.core.search.contract import GrepOptions, RepoState, SearchResponse, check
    from codesight_tui.core.search.grep import text_hits
    from codesight_tui.core.search.pattern import compile_pattern
    from codesight_tui.core.store.store import path_matches

    options = request.grep or GrepOptions()
    compiled = compile_pattern(request.query, options)
    f = request.filters
    languages = {normalize_language(t) for t in options.types} | (
        {normalize_language(f.language)} if f.language else set()
    )
    where, _names = fleet.store.repo_filter(f.repo)
    narrow = (
        compiled.plan.expression(lambda text: f"contains(content, {sql_quote(text)})") if compiled.sensitive else None
    )
    clause = " AND ".join(f"({w})" for w in (where, narrow) if w) or None
    found: dict[tuple[str, str, int], SearchResult] = {}
    try:
        for rows in FleetQuery(fleet.store, None).texts(clause):
            check(request.cancel)
            for r in rows:
                path, language = r["path"], r["language"] or ""
                if (languages and language not in languages) or (f.glob and not path_matches(path, f.glob)):
                    continue
                for hit in text_hits(
                    compiled, options, path, language, r["content"], int(r["start_line"]), request.limit
                ):
                    hit.repo, hit.commit = r["repo"], r["commit"]
                    found.setdefault((hit.repo, hit.path, hit.line), hit)  # a line cut in pieces: its first
    except CodeSightError:
        raise
    except Exception as exc:  # the object store unreachable, a credential refused, a table damaged  # noqa: BLE001
        raise explain(exc, fleet.spec, "search") from None
    hits = [found[k] for k in sorted(found)][: request.limit]
    return SearchResponse(hits, [], ["grep"], repos=[RepoState(fleet.spec.uri)])


def ranked(
    store: FleetStore,
    query: str,
    model: FleetModel | None,
    *,
    top_k: int = 10,
    mode: Mode = "hybrid",
    repo: str | None = None,
    glob: str | None = None,
    language: str | None = None,
    depth: int = 80,
    rrf_k: int = 30,
    like: RelatedSource | None = None,
    cancel: Cancel | None = None,
) -> tuple[list[SearchResult], list[str], list[str]]:
    """A fleet store's answer: ``(hits, lists fused, notices)``. BM25 over the store's full-text
    index and the nearest vectors of ``model`` (the store's; None: BM25 alone), through the
    steps before fusion and the ranking stack of a local index (``core.search.searcher``);
    each hit's ``repo`` and ``commit`` say where it is. ``like`` (a ``RelatedSource``)
    searches for code like that chunk: BM25 over its names, the vectors from its code; it and
    what overlaps it left out."""
    from codesight_tui.core.search.searcher import LIKE_ROOM, fuse_and_rank, retrieve, without_source

    if like is not None:
        query, top_k = like.terms, top_k + LIKE_ROOM
    where, chosen = store.repo_filter(repo, language)
    if repo and not chosen:
        return [], [], [f"no repository in {store.spec.uri} matches {repo!r}"]
    # This search's filter and rows live in its own object: the service's threads share one
    # store, and state on it gave a search another repository's hits (27 of 600).
    q = FleetQuery(store, where)
    kind = store.meta().get("kind", "static")
    near = _nearest_list(q, model, kind, like.content if like is not None else query) if mode != "bm25" else None
    found = retrieve(
        q, query, mode=mode, depth=depth, glob=glob, language=language,
        full=near if kind == "full" else None, static=near if kind != "full" else None,
        bm25_filters_paths=False, cancel=cancel,
    )  # fmt: skip
    if found is None or not any(found.rankings.values()):
        return [], [], []
    current = store.commits()

    def origin(cid: int) -> tuple[str, str]:
        _row, repo_name, written_at = q.rows[cid]
        return repo_name, current.get(repo_name) or written_at  # its commit, as `fleet status` says

    hits = fuse_and_rank(
        q,
        found.rankings,
        query,
        top_k=top_k,
        stack=mode != "vector",
        rrf_k=rrf_k,
        glob=glob,
        language=language,
        coverage=1.0 if kind == "full" else 0.0,
        query_vector=found.query_vector,
        vectors_for=q.vectors_of,
        static_weight=1.0 if "static" in found.rankings else 0.0,
        static_vector=found.static_vector,
        static_vectors_for=q.vectors_of,
        origin=origin,
    )
    if like is not None:
        hits = without_source(hits, like, top_k - LIKE_ROOM)
    return hits, [n for n in ("bm25", "static", "vector") if n in found.rankings], []


def _nearest_list(q: FleetQuery, model: FleetModel | None, kind: str, text: str) -> NearestList | None:
    """The store's one vector list: the full model's (``vector``) or the static tier's, whose
    gate is the words its model knows; its filter is the search's (``q.where``)."""
    from codesight_tui.core.fusion import RELEVANCE_FLOOR, STATIC_RELEVANCE_FLOOR
    from codesight_tui.core.search.searcher import NearestList

    if model is None:
        return None
    encode = model.encode_query

    def find(n: int) -> tuple[np.ndarray, list[tuple[int, float]]]:
        vector = encode(text)
        return vector, q.nearest(vector, n)

    return NearestList(
        "vector" if kind == "full" else "static",
        find,
        RELEVANCE_FLOOR if kind == "full" else STATIC_RELEVANCE_FLOOR,
        known_share=model.known_share if kind == "static" else None,
        filters_language=True,
    )
