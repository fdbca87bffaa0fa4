"""``codesight mcp``: the search engine served to AI assistants over the Model Context Protocol
(stdio), built on the official SDK's ``MCPServer``.

Five tools, whose signatures are a public contract: ``search(query, repo_path?, top_k?,
file_glob?)``, ``index(repo_path?, force_rebuild?)``, ``status(repo_path?)``, ``watch(repo_path?)``
and ``unwatch(repo_path?)``; ``search`` also takes ``mode``, ``language`` and ``roots`` (several
repositories, one ranked list). Each declares an output schema and returns structured content.

No call waits for embedding: a repository without an index is indexed in the background and
searched with BM25 as soon as its lexical phase commits (seconds); every answer says how complete
the index is. The model loads lazily, once per process, in a child process shared by every
repository. Only repositories under the allowed roots are read, and nothing is written inside
them. Like the CLI and the TUI, this module uses only the public ``CodeSight`` API.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from codesight_tui.core.apps.workspace import EngineOptions, SearchRequest, Workspace
from codesight_tui.core.engine import CodeSight
from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.ingest.paths import find_repo_root, outermost
from codesight_tui.core.modes import Vectors
from codesight_tui.core.process.jobs import IndexJob
from codesight_tui.core.text import LONE_SURROGATE

if TYPE_CHECKING:
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.search.searcher import SearchResponse, SearchResult

# How long a tool call waits for a lexical phase to commit before answering with what exists: well
# under the 30 to 60 s tool timeouts assistants use.
LEXICAL_WAIT_S = 20.0
SNIPPET_CHARS = 4000

INSTRUCTIONS = """codesight searches local code repositories: BM25 and embeddings fused, with a ranking
tuned for code. Use `search` with plain words ("where do we retry failed uploads") or a symbol
(`RetryPolicy`), and `find_related` with "path:line" or a symbol for the code most like it. To
follow the code from a hit: `find_definition`, `find_references` (never comments or strings),
`find_callers` and `find_callees`, each with a name, "Scope.name" or "path:line". A
repository without an index is indexed on first use: answers come from BM25 within seconds while
vectors are computed in the background (see `index` in each answer). `watch` keeps an index
current while files change."""


# --- output schemas (the structured content of each tool) -------------------------------------
class IndexState(BaseModel):
    """How complete a repository's index is right now."""

    repo: str = Field(description="the repository's root")
    indexed: bool = Field(description="a lexical pass has completed: BM25 search covers the repository")
    files: int
    chunks: int
    vectors: int = Field(description="chunks with an embedding")
    vector_coverage: float = Field(description="share of chunks with an embedding, 0 to 1")
    indexing: bool = Field(description="an indexer (this server or another process) is writing now")
    phase: str | None = Field(default=None, description="this server's indexer: scan, lexical or embed")
    progress: str | None = Field(default=None, description="e.g. 'embed 1200/5000'")
    watching: bool = False
    model: str = Field(description="the embedding model: name and state (loading, ready, failed: ...)")
    last_indexed: str | None = Field(default=None, description="ISO time of the last completed lexical pass")


class Hit(BaseModel):
    repo: str = Field(description="the repository's root; for a fleet store's hit, its name in the store")
    commit: str | None = Field(default=None, description="a fleet store's hit: the commit it was indexed at")
    path: str = Field(description="relative to repo")
    start_line: int
    end_line: int
    line: int = Field(description="the line to open: the definition's own line, else the first matching line")
    scope: str = Field(description="enclosing definitions, e.g. 'class Flask > def url_for'")
    name: str = Field(description="compact scope, e.g. 'Flask.url_for'")
    language: str
    score: float
    found_by: list[str] = Field(description="retrievers that found it: bm25, static, vector, symbol")
    bm25_rank: int | None = None
    vector_rank: int | None = None
    static_rank: int | None = Field(default=None, description="rank in the static tier's list")
    page: int | None = Field(default=None, description="a PDF hit's page (its lines are those of the extracted text)")
    slide: int | None = Field(default=None, description="a PPTX hit's slide")
    location: str = Field(description="where a person finds it: 'src/app.py:42', 'spec.pdf p.12', 'deck.pptx slide 4'")
    snippet: str
    translations: int = Field(default=0, description="the same page in other languages, folded into this hit")


class SearchOutput(BaseModel):
    query: str
    mode: str
    results: list[Hit]
    retrievers: list[str] = Field(
        default_factory=list,
        description="the lists fused for this answer: bm25,"
        " static (fast static-model vectors), vector (the full model)",
    )
    index: list[IndexState] = Field(description="completeness of each repository searched")
    notices: list[str] = Field(default_factory=list, description="what this answer lacks, in words")
    elapsed_ms: float = Field(description="time the server spent on this call")
    tokens: int = Field(default=0, description="this answer's size in tokens (the model tokenizer codesight ships)")


class SymbolOut(BaseModel):
    name: str
    kind: str = Field(description="the language's word for it: def, class, func, fn, struct, method, ...")
    scope: str = Field(description="its enclosing definitions, outermost first, '.' between")
    path: str
    line: int = Field(description="the line of its name")
    start_line: int
    end_line: int


class SiteOut(BaseModel):
    path: str
    line: int
    name: str
    kind: str = Field(description="call, type, import, other; 'definition' for a definition's own name")
    text: str = Field(description="the line")
    within: SymbolOut | None = Field(default=None, description="the definition it is in (for callers: the caller)")
    target: SymbolOut | None = Field(default=None, description="callees: the definition the call resolves to")
    resolution: str = Field(description="'resolved', 'one of N candidates (same folder)', or 'not defined here'")


class NavigationOutput(BaseModel):
    action: str
    target: str
    name: str
    resolution: str = Field(description="'resolved' where the target names one definition, else 'one of N candidates'")
    symbol: SymbolOut | None = Field(default=None, description="the definition followed")
    candidates: list[SymbolOut] = Field(description="every definition the name has")
    sites: list[SiteOut]
    truncated: bool = False
    index: IndexState
    elapsed_ms: float = 0.0
    tokens: int = Field(default=0, description="this answer's size in tokens (the model tokenizer codesight ships)")


class IndexOutput(BaseModel):
    repo: str
    started: bool = Field(description="this call started an index run (false: one was already running)")
    message: str
    state: IndexState


class StatusOutput(BaseModel):
    state: IndexState
    pending: int = Field(description="chunks still without an embedding")
    stale_files: int | None = Field(description="files changed on disk since the last index run")
    changed: dict[str, list[str]] = Field(default_factory=dict, description="added, modified, deleted (first 50 each)")
    index_bytes: int
    skipped: dict[str, int] = Field(default_factory=dict, description="files passed over, by reason")
    read_only: bool = False
    notices: list[str] = Field(default_factory=list)


class WatchOutput(BaseModel):
    repo: str
    watching: bool
    mode: str | None = Field(default=None, description="events (inotify) or poll")
    batches: int = Field(default=0, description="batches of changes indexed so far")
    message: str


# --- state -----------------------------------------------------------------------------------
class Repos:
    """The server's allowed roots, over the core's ``Workspace`` (one engine per repository,
    background index runs, watchers, the model's warm-up). Thread-safe: tools run in worker
    threads, in parallel."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        # The model runs in a child process, shared by every repository's engine; `codesight mcp`
        # is a guarded entry point, so workers can spawn; a long-lived process: BM25 from memory.
        self.workspace = Workspace(EngineOptions(model_process=True, lexical_processes=True, resident_bm25=True))
        self._lock = threading.RLock()
        self.caught_up: set[Path] = set()  # repositories this server has brought up to date

    # --- where ------------------------------------------------------------------------------
    def _allowed(self, real: Path) -> bool:
        return any(real == r or r in real.parents for r in self.roots)

    def resolve(self, repo_path: str | None) -> Path:
        """The repository a tool call names: inside the allowed roots (after ``..`` and symlinks
        are resolved), widened to its git repository where that stays inside them."""
        if repo_path is None or not str(repo_path).strip():
            if not self.roots:
                raise CodeSightError(
                    "no repository to search: this server was started in / or a home directory;"
                    " restart it with --root PATH (or list repositories in the config's `repos`)"
                )
            base = self.roots[0]
        else:
            given = Path(str(repo_path)).expanduser()
            if not given.is_absolute():
                given = (self.roots[0] if self.roots else Path.cwd()) / given
            base = Path(os.path.realpath(given))
            if not self._allowed(base):
                allowed = ", ".join(map(str, self.roots))
                raise CodeSightError(
                    f"repo_path {repo_path} is outside the allowed roots ({allowed});"
                    " start the server with --root to allow it"
                )
        if not base.is_dir():
            raise CodeSightError(f"repo_path {repo_path or base}: no such directory")
        repo = Path(os.path.realpath(find_repo_root(base)))
        return repo if self._allowed(repo) else base

    def engine(self, repo: Path) -> CodeSight:
        return self.workspace.engine(repo)

    def start_index(self, repo: Path, force: bool = False) -> tuple[IndexJob, bool]:
        """A background index run of ``repo`` (``Workspace.start_index``)."""
        with self._lock:
            job, started = self.workspace.start_index(repo, force=force)
            if job.phase != "watch":
                self.caught_up.add(repo)
            return job, started

    def state(self, repo: Path) -> IndexState:
        cs = self.engine(repo)
        counts = cs.counts()
        job = self.workspace.running(repo)
        last = cs.last_indexed()
        return IndexState(
            repo=str(repo),
            indexed=cs.is_indexed(),
            files=counts["files"],
            chunks=counts["chunks"],
            vectors=counts["vectors"],
            vector_coverage=round(counts["vectors"] / counts["chunks"], 4) if counts["chunks"] else 0.0,
            indexing=job is not None or cs.indexing_now(),
            phase=job.phase if job else None,
            progress=f"{job.phase} {job.done}/{job.total}" if job else None,
            watching=self.workspace.watching(repo),
            model=self.workspace.model_state(cs),
            last_indexed=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(last)) if last else None,
        )

    def close(self) -> None:
        self.workspace.close()


class _Server(MCPServer):
    """The SDK's server, with arguments that fail validation said in one line per field
    ("top_k: Input should be a valid integer") instead of pydantic's report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            said = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in cause.errors())
            raise ToolError(f"{name}: {said}") from cause


def _top_k(value: int) -> int:
    if not 1 <= value <= 100:
        raise ToolError(f"top_k must be between 1 and 100 (got {value})")
    return value


def _hit(r: SearchResult) -> Hit:
    found = [
        name for name, rank in (("bm25", r.bm25_rank), ("static", r.static_rank), ("vector", r.vector_rank)) if rank
    ]
    if r.definition or not found:
        found.append("symbol")
    snippet = r.content if len(r.content) <= SNIPPET_CHARS else r.content[:SNIPPET_CHARS] + "\n…"
    return Hit(
        repo=r.repo,
        path=r.path,
        start_line=r.start_line,
        end_line=r.end_line,
        line=r.line or r.start_line,
        scope=r.scope,
        name=r.name,
        language=r.language or "",
        score=round(r.score, 6),
        found_by=found,
        bm25_rank=r.bm25_rank,
        vector_rank=r.vector_rank,
        static_rank=r.static_rank,
        page=r.page,
        slide=r.slide,
        location=r.location,
        snippet=snippet,
        commit=r.commit or None,
        translations=r.translations,
    )


async def _wait_lexical(job: IndexJob, ctx: Context, cs: CodeSight, limit: float = LEXICAL_WAIT_S) -> None:
    """Wait (up to ``limit``) for a run's lexical phase to commit, reporting progress to the client.
    A run that found another writer at work waits for that writer's lexical phase instead."""
    end = time.monotonic() + limit
    last = None
    while time.monotonic() < end:
        if job.lexical_done.is_set() and (job.error is None or cs.is_indexed() or not cs.indexing_now()):
            return
        now = (job.phase, job.done, job.total)
        if ctx is not None and now != last:
            last = now
            with contextlib.suppress(Exception):
                await ctx.report_progress(job.done, job.total or None, f"{job.phase} {job.done}/{job.total}")
        await anyio.sleep(0.1)


def build_server(  # noqa: C901 - its tools are closures defined inside it; each on its own is simple
    roots: list[Path],
    *,
    watch_roots: bool = False,
    fleet: Fleet | None = None,
) -> tuple[_Server, Repos]:
    """The ``MCPServer`` with codesight's tools over ``roots``; returns ``(server, repos)``."""
    from codesight_tui import __version__

    repos = Repos(roots)
    server = _Server("codesight", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def where(repo_path: str | None) -> Path:
        try:
            return repos.resolve(repo_path)
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None

    async def prepare(targets: list[Path], ctx: Context, mode: str | None) -> list[str]:
        """Bring each repository to where it can answer (a first use starts its index run and
        waits for the lexical phase); returns what the answer should say about them."""
        try:
            return await _prepare(targets, ctx, mode)
        except CodeSightError as exc:  # an index another process holds, a damaged one: one line
            raise ToolError(str(exc)) from None

    async def _prepare(targets: list[Path], ctx: Context, mode: str | None) -> list[str]:
        notes: list[str] = []
        for repo in targets:
            cs = repos.engine(repo)
            if repo not in repos.caught_up and repos.workspace.running(repo) is None:
                first, _ = repos.start_index(repo)  # first use in this server: bring it up to date
                if not cs.is_indexed():
                    await _wait_lexical(first, ctx, cs)
            elif not cs.is_indexed() and (going := repos.workspace.running(repo)) is not None:
                await _wait_lexical(going, ctx, cs)
            job = repos.workspace.job_of(repo)
            if job is not None and job.error and job.finished.is_set():
                notes.append(f"{repo.name}: {job.error}")
            if (mode or cs.settings.default_mode) != "bm25":
                repos.workspace.warm_model(cs)
        return notes

    async def answer(
        kind: str,
        query: str,
        targets: list[Path],
        mode: str | None,
        run: Callable[[], SearchResponse],
        notes: list[str],
        t0: float,
    ) -> SearchOutput:
        """Run a search (``run()`` in a worker thread) and say what it lacks; the answer's size in
        tokens is in it and in ``codesight stats``."""
        engines = [repos.engine(r) for r in targets]
        try:
            hits = await anyio.to_thread.run_sync(run)
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None
        states = [repos.state(r) for r in targets]
        used = mode or engines[0].settings.default_mode
        for st in states:
            if not st.indexed:
                notes.append(
                    f"{Path(st.repo).name}: not indexed yet ({st.progress or 'starting'}); search again"
                    " in a few seconds"
                )
            elif used != "bm25" and st.vector_coverage < 1:
                by = "BM25 and the static tier" if "static" in hits.retrievers else "BM25 only"
                notes.append(
                    f"{Path(st.repo).name}: vectors cover {st.vector_coverage:.0%} of chunks so far"
                    f" ({st.progress or 'run index to finish'}); uncovered chunks are found by {by}"
                )
        if used != "bm25" and not engines[0].embedder_loaded:
            notes.append(
                "the embedding model is "
                + ("unavailable" if engines[0].model_error else "still loading")
                + ": this answer is "
                + ("BM25 + the static tier" if "static" in hits.retrievers else "BM25 only")
            )
        out = SearchOutput(
            query=query,
            mode=used,
            results=[_hit(h) for h in hits],
            retrievers=hits.retrievers,
            index=states,
            notices=hits.notices + notes,
            elapsed_ms=0.0,
        )

        def count() -> None:
            out.tokens = engines[0].token_count(out.model_dump_json())
            for engine in engines:
                mine = [h for h in out.results if h.repo == str(engine.root)]
                if mine:
                    size = engine.token_count(json.dumps([h.model_dump() for h in mine]))
                    engine.record_served(kind, len(mine), size, [h.path for h in mine])

        await anyio.to_thread.run_sync(count)
        out.elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
        return out

    @server.tool(annotations=ToolAnnotations(title="Search code", read_only_hint=True, open_world_hint=False))
    async def search(
        query: str,
        ctx: Context,
        repo_path: str | None = None,
        top_k: int = 10,
        file_glob: str | None = None,
        mode: str | None = None,
        language: str | None = None,
        roots: list[str] | None = None,
        fleet_repo: str | None = None,
    ) -> SearchOutput:
        """Search code by meaning or by name: plain words ("where do we retry failed uploads") or a
        symbol ("RetryPolicy"). Returns ranked hits with path, lines, enclosing scope and snippet.
        repo_path: the repository (default: the first allowed root). roots: several repositories,
        one ranked list. file_glob: gitignore-style path filter, e.g. "src/**/*.py". mode: hybrid
        (default), bm25 or vector. language: e.g. python, go. A repository never indexed is indexed
        now: the first answer comes from BM25 within seconds, vectors follow in the background.
        Where the server has a fleet store (the team's repositories), its hits come too, each with
        its repository's name and commit; fleet_repo narrows them by a glob over those names."""
        t0 = time.perf_counter()
        if not query or not query.strip():
            raise ToolError('the query is empty: say what to look for, e.g. "parse config file"')
        top_k = _top_k(top_k)
        targets = [where(r) for r in roots] if roots else [where(repo_path)]
        targets = outermost(targets)  # nested roots are one index, not one each
        notes = await prepare(targets, ctx, mode)
        if fleet_repo and fleet is None:
            raise ToolError("fleet_repo narrows a fleet store, and this server has none (codesight mcp --store URI)")
        request = SearchRequest(
            query,
            tuple(targets),
            top_k,
            mode,
            file_glob,
            language,
            vectors=Vectors.LOADED,
            fleet=fleet,
            fleet_repo=fleet_repo,
        )

        def run() -> SearchResponse:
            return repos.workspace.search(request)

        return await answer("search", query, targets, mode, run, notes, t0)

    @server.tool(annotations=ToolAnnotations(title="Find related code", read_only_hint=True, open_world_hint=False))
    async def find_related(
        location: str,
        ctx: Context,
        repo_path: str | None = None,
        top_k: int = 10,
        file_glob: str | None = None,
        mode: str | None = None,
        language: str | None = None,
        roots: list[str] | None = None,
    ) -> SearchOutput:
        """Find the code most like a given place: other implementations of the same idea, callers'
        twins, the test or the sibling module. location: "path:line" (relative to the repository),
        a file, or a symbol ("RetryPolicy"). Same ranking and options as search; the place itself
        is left out. roots: look across several repositories. Where the server has a fleet store,
        its code like that place comes too (and a symbol only the fleet has is looked up there)."""
        t0 = time.perf_counter()
        if not location or not location.strip():
            raise ToolError('say where: "path:line", a file, or a symbol')
        top_k = _top_k(top_k)
        if roots:
            targets = [where(r) for r in roots]
        elif repo_path is None and len(repos.roots) > 1:
            # "path:line" of any allowed root: each is looked in, the first that has it is the source
            targets = [where(str(r)) for r in repos.roots]
        else:
            targets = [where(repo_path)]
        targets = outermost(targets)
        notes = await prepare(targets, ctx, mode)
        request = SearchRequest(
            location, tuple(targets), top_k, mode, file_glob, language, vectors=Vectors.LOADED, like=True, fleet=fleet
        )

        def run() -> SearchResponse:
            return repos.workspace.search(request)

        return await answer("find_related", location, targets, mode, run, notes, t0)

    async def follow(
        action: str,
        symbol: str,
        ctx: Context,
        repo_path: str | None,
        file_glob: str | None,
        language: str | None,
        limit: int,
    ) -> NavigationOutput:
        """One navigation tool's call: index a repository never seen, follow, count the tokens."""
        t0 = time.perf_counter()
        if not symbol or not symbol.strip():
            raise ToolError('say what to follow: a name ("RetryPolicy", "Cache.get") or "path:line"')
        repo = where(repo_path)
        await prepare([repo], ctx, "bm25")
        cs = repos.engine(repo)

        def run() -> NavigationOutput:
            nav = repos.workspace.follow(
                repo, action, symbol, max(1, min(limit, 1000)), glob=file_glob, language=language
            )
            out = NavigationOutput.model_validate({**nav.to_dict(), "index": repos.state(repo)})
            out.tokens = cs.token_count(out.model_dump_json())
            cs.record_served(action, len(nav), out.tokens, sorted({s.path for s in nav.sites}))
            return out

        try:
            out = await anyio.to_thread.run_sync(run)
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None
        out.elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
        return out

    @server.tool(annotations=ToolAnnotations(title="Find a definition", read_only_hint=True, open_world_hint=False))
    async def find_definition(
        symbol: str,
        ctx: Context,
        repo_path: str | None = None,
        file_glob: str | None = None,
        language: str | None = None,
    ) -> NavigationOutput:
        """Where a symbol is defined: every function, method, class or type of that name, with its
        kind, scope, path and line. symbol: a name ("RetryPolicy"), "Scope.name" ("Cache.get"), or
        "path:line" (the definition around that line). resolution says whether it is one
        definition or one of several candidates."""
        return await follow("definitions", symbol, ctx, repo_path, file_glob, language, 1000)

    @server.tool(annotations=ToolAnnotations(title="Find references", read_only_hint=True, open_world_hint=False))
    async def find_references(
        symbol: str,
        ctx: Context,
        repo_path: str | None = None,
        file_glob: str | None = None,
        language: str | None = None,
        limit: int = 200,
    ) -> NavigationOutput:
        """Every place a symbol is named in code (never in comments or strings): calls, type uses,
        imports, other uses, and its definitions, each with its line, its text and the definition
        it is in. Where the symbol names one definition ("path:line", or a name defined once), uses
        that resolve to another definition of the same name are left out."""
        return await follow("references", symbol, ctx, repo_path, file_glob, language, limit)

    @server.tool(annotations=ToolAnnotations(title="Find callers", read_only_hint=True, open_world_hint=False))
    async def find_callers(
        symbol: str,
        ctx: Context,
        repo_path: str | None = None,
        file_glob: str | None = None,
        language: str | None = None,
        limit: int = 200,
    ) -> NavigationOutput:
        """Who calls a function or method: each call with the definition it is made from (within).
        symbol: a name, "Scope.name" or "path:line". A call that may mean another definition of the
        same name says so in its resolution ("one of N candidates")."""
        return await follow("callers", symbol, ctx, repo_path, file_glob, language, limit)

    @server.tool(annotations=ToolAnnotations(title="Find callees", read_only_hint=True, open_world_hint=False))
    async def find_callees(
        symbol: str,
        ctx: Context,
        repo_path: str | None = None,
        file_glob: str | None = None,
        language: str | None = None,
        limit: int = 200,
    ) -> NavigationOutput:
        """What a function, method or class calls: each callee once, at its first call, with the
        definition it resolves to (target) where the repository has one; a library call has none
        ("not defined here")."""
        return await follow("callees", symbol, ctx, repo_path, file_glob, language, limit)

    @server.tool(
        annotations=ToolAnnotations(
            title="Index a repository",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    async def index(ctx: Context, repo_path: str | None = None, force_rebuild: bool = False) -> IndexOutput:
        """Bring a repository's index up to date (force_rebuild: from scratch; cached embeddings are
        reused). Returns as soon as BM25 search covers the repository, with progress notifications
        until then; embeddings continue in the background (see state.vector_coverage, or call
        status)."""
        repo = where(repo_path)
        job, started = repos.start_index(repo, force=force_rebuild)
        await _wait_lexical(job, ctx, repos.engine(repo))
        state = repos.state(repo)
        if job.error:
            message = job.error
        elif not job.lexical_done.is_set():
            message = f"indexing continues in the background ({state.progress})"
        elif state.vector_coverage < 1 and state.indexing:
            message = (
                f"BM25 search covers the repository; embedding continues in the background"
                f" ({state.vector_coverage:.0%} done)"
            )
        else:
            message = "index is up to date"
        if not started:
            message = "an index run was already going: " + message
        return IndexOutput(repo=str(repo), started=started, message=message, state=state)

    @server.tool(annotations=ToolAnnotations(title="Index status", read_only_hint=True, open_world_hint=False))
    async def status(repo_path: str | None = None) -> StatusOutput:
        """What is indexed and how fresh it is: files, chunks, vector coverage, last index time,
        files changed on disk since, the model, and whether an indexer is running now."""
        repo = where(repo_path)
        cs = repos.engine(repo)
        st = await anyio.to_thread.run_sync(cs.status)
        files = st.get("changed_files")
        changed = (
            {"added": files["added"][:50], "modified": files["modified"][:50], "deleted": files["deleted"][:50]}
            if files
            else {}
        )
        return StatusOutput(
            state=repos.state(repo),
            pending=st.get("pending", 0),
            stale_files=st.get("changed"),
            changed=changed,
            index_bytes=st.get("index_bytes", 0),
            skipped=st.get("skipped") or {},
            read_only=bool(st.get("read_only")),
            notices=st.get("notices") or [],
        )

    @server.tool(
        annotations=ToolAnnotations(
            title="Watch a repository",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    def watch(repo_path: str | None = None) -> WatchOutput:
        """Keep a repository's index current while files change: each burst of saves is indexed as
        one batch (only changed files; only new text embedded), searchable within about a second."""
        repo = where(repo_path)
        return _watch(repos, repo)

    @server.tool(
        annotations=ToolAnnotations(
            title="Stop watching",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    def unwatch(repo_path: str | None = None) -> WatchOutput:
        """Stop keeping a repository's index current (the index stays as it is)."""
        repo = where(repo_path)
        watcher = repos.workspace.unwatch(repo, timeout=2)
        if watcher is None:
            return WatchOutput(repo=str(repo), watching=False, message="was not being watched")
        return WatchOutput(
            repo=str(repo),
            watching=False,
            mode=watcher.mode,
            batches=watcher.batches,
            message=f"stopped watching after {watcher.batches} batches",
        )

    if watch_roots:
        for root in repos.roots:
            if (root / ".git").exists():
                _watch(repos, root)
    return server, repos


def _watch(repos: Repos, repo: Path) -> WatchOutput:
    with repos._lock:
        watcher = repos.workspace.watcher(repo)
        if watcher is not None and watcher.running:
            return WatchOutput(
                repo=str(repo), watching=True, mode=watcher.mode, batches=watcher.batches, message="already watching"
            )
        repos.caught_up.add(repo)  # the watcher's first batch catches up with the whole tree
        job = repos.workspace.running(repo)
    if job is not None:  # the watcher takes over: its runs give way to each new change, a plain run doesn't
        job.cancel(wait=30)
    watcher = repos.workspace.watch(repo)
    return WatchOutput(
        repo=str(repo),
        watching=True,
        mode=watcher.mode,
        batches=0,
        message="watching: changes are indexed in batches as they are saved",
    )


def default_roots(given: list[str] | None) -> list[Path]:
    """``--root`` paths, else the repository around the current directory plus the config's
    saved repositories."""
    if given:
        out = []
        for g in given:
            p = Path(g).expanduser()
            if not p.is_dir():
                raise UsageError(f"--root {g}: no such directory")
            out.append(p.resolve())
        return out
    from codesight_tui.core.config import load_settings

    roots = []
    here = find_repo_root(Path.cwd())
    if not too_broad(here):
        roots.append(here)
    else:  # desktop assistants start servers in / or ~: never serve all of it unasked
        import sys

        print(
            f"codesight mcp: not serving {here} (the filesystem root or a home directory) without --root;"
            " start it with --root PATH, or list repositories in the config's `repos`",
            file=sys.stderr,
        )
    roots += [Path(r).expanduser().resolve() for r in load_settings().repos if Path(r).expanduser().is_dir()]
    return list(dict.fromkeys(roots))


def too_broad(path: Path) -> bool:
    """The filesystem root or a home directory (this user's, or any directly under /home or
    /Users): never a root the server takes on its own."""
    real = Path(os.path.realpath(path))
    if real == Path(real.anchor) or real == Path(os.path.realpath(Path.home())):
        return True
    return real.parent in (Path("/home"), Path("/Users"))


# A frame nested deeper than this is refused: the SDK's parser recurses per level, and a frame of
# 100,000 brackets made it drop the request without a reply.
MAX_FRAME_DEPTH = 64
_FRAME_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _depth(obj: object, limit: int) -> int:
    """How deep ``obj`` nests (stops counting past ``limit``)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((v, d + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _clean_strings(obj: Any) -> Any:
    if isinstance(obj, str):
        return LONE_SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, list):
        return [_clean_strings(v) for v in obj]
    if isinstance(obj, dict):
        return {_clean_strings(k): _clean_strings(v) for k, v in obj.items()}
    return obj


def guard_frame(line: str) -> str:
    """One line of the stdio transport, made safe for the SDK: lone surrogates (``"\\ud800"``,
    which the reply could never be encoded with) become U+FFFD, so the request is served; a frame
    nested past ``MAX_FRAME_DEPTH`` becomes a call of a method no server has, so its id still gets
    an error reply instead of silence. Anything else passes unchanged."""
    if "\\u" not in line and line.count("[") + line.count("{") <= MAX_FRAME_DEPTH:
        return line  # the usual frame: no escapes, shallow by construction
    try:
        obj = json.loads(line)
        deep = _depth(obj, MAX_FRAME_DEPTH) > MAX_FRAME_DEPTH
    except RecursionError:
        obj, deep = None, True
    except ValueError:
        return line  # not JSON: the SDK reports it
    if deep:
        found = _FRAME_ID.search(line[:4096])
        if found is None:
            return "\n"  # a notification: there is nobody to answer
        return (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": json.loads(found.group(1)),
                    "method": f"codesight/rejected: frame nested deeper than {MAX_FRAME_DEPTH} levels",
                }
            )
            + "\n"
        )
    cleaned = _clean_strings(obj)
    return line if cleaned == obj else json.dumps(cleaned) + "\n"


class _GuardedLines:
    """The server's stdin, line by line through ``guard_frame``."""

    def __init__(self, source: AsyncIterable[str]) -> None:
        self.source = source

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            yield guard_frame(line)


async def _run_stdio(server: _Server) -> None:
    """``MCPServer.run_stdio_async`` with ``guard_frame`` between stdin and the SDK."""
    import io
    import sys

    from mcp.server.stdio import stdio_server

    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    # The SDK only iterates its stdin (async for), which _GuardedLines does; it is typed as a file.
    async with stdio_server(stdin=_GuardedLines(stdin)) as (read_stream, write_stream):  # type: ignore[arg-type]
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())


def serve(roots: list[str] | None = None, *, watch: bool = False, fleet: Fleet | None = None) -> int:
    """Run the server on stdin/stdout until the client goes away; ``fleet`` (a ``Fleet``) is
    searched beside the repositories."""
    import signal

    server, repos = build_server(default_roots(roots), watch_roots=watch, fleet=fleet)

    # SIGTERM and SIGHUP (the client or the ssh session went away) end it the way EOF does: the
    # index runs stop at a batch boundary and the model's child process goes with it.
    def terminate(number: int, frame: FrameType | None) -> None:
        # The transport's reader thread is blocked on stdin, which the client still holds open:
        # waiting for it would never end. Stop the index runs (each at a batch boundary, committed
        # work kept), end the model's child process, and leave.
        try:
            repos.close()
        finally:
            os._exit(128 + number)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, terminate)
    try:
        anyio.run(_run_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        repos.close()
    return 0
