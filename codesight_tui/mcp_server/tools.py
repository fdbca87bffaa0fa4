"""The MCP tools: ``search``, ``find_related``, ``find_definition``, ``find_references``,
``find_callers``, ``find_callees``, ``index``, ``status``, ``watch`` and ``unwatch``, each a
method of ``Tools`` over the server's repositories (``Repos``, on the core's ``Workspace``) and
its fleet store. ``build_server`` registers each with the promises ``TOOLS`` lists."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.ingest.paths import outermost
from codesight_tui.core.modes import Mode, Vectors, checked_mode
from codesight_tui.core.search.contract import Case, Filters, GrepOptions, SearchRequest
from codesight_tui.mcp_server.schemas import (
    GrepMatch,
    GrepOutput,
    Hit,
    IndexOutput,
    NavigationOutput,
    SearchOutput,
    StatusOutput,
    WatchOutput,
)
from codesight_tui.mcp_server.state import Repos, watch_repo

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.process.jobs import IndexJob
    from codesight_tui.core.search.contract import SearchResult

# How long a tool call waits for a lexical phase to commit before answering with what exists: well
# under the 30 to 60 s tool timeouts assistants use.
LEXICAL_WAIT_S = 20.0
SNIPPET_CHARS = 4000


def _top_k(value: int) -> int:
    if not 1 <= value <= 100:
        raise ToolError(f"top_k must be between 1 and 100 (got {value})")
    return value


def checked(mode: str | None) -> Mode | None:
    """A tool's ``mode`` as the contract takes it; a bad one is the tool's error, in one line."""
    try:
        return checked_mode(mode) if mode else None
    except CodeSightError as exc:
        raise ToolError(str(exc)) from None


def _match(h: SearchResult, repo: str) -> GrepMatch:
    before, after = h.context
    return GrepMatch(
        repo=h.repo or repo,
        path=h.path,
        line=h.line,
        column=h.column,
        text=h.match_text,
        spans=[list(s) for s in h.spans],
        scope=h.scope,
        before=before,
        after=after,
        commit=h.commit,
    )


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
        grain=r.grain,
        parts=[list(p) for p in r.parts],
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


class Tools:
    """The tools over ``repos`` (the allowed roots and their engines) and ``fleet`` (a store
    searched beside them, or None). Each is a coroutine or function the SDK calls in turn."""

    def __init__(self, repos: Repos, fleet: Fleet | None = None) -> None:
        self.repos, self.fleet = repos, fleet

    def where(self, repo_path: str | None) -> Path:
        try:
            return self.repos.resolve(repo_path)
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None

    async def prepare(self, targets: list[Path], ctx: Context, mode: str | None) -> list[str]:
        """Bring each repository to where it can answer (a first use starts its index run and
        waits for the lexical phase); returns what the answer should say about them."""
        try:
            return await self._prepare(targets, ctx, mode)
        except CodeSightError as exc:  # an index another process holds, a damaged one: one line
            raise ToolError(str(exc)) from None

    async def _prepare(self, targets: list[Path], ctx: Context, mode: str | None) -> list[str]:
        notes: list[str] = []
        for repo in targets:
            cs = self.repos.engine(repo)
            if repo not in self.repos.caught_up and self.repos.workspace.running(repo) is None:
                first, _ = self.repos.start_index(repo)  # first use in this server: bring it up to date
                if not cs.is_indexed():
                    await _wait_lexical(first, ctx, cs)
            elif not cs.is_indexed() and (going := self.repos.workspace.running(repo)) is not None:
                await _wait_lexical(going, ctx, cs)
            job = self.repos.workspace.job_of(repo)
            if job is not None and job.error and job.finished.is_set():
                notes.append(f"{repo.name}: {job.error}")
            if (mode or cs.settings.default_mode) != "bm25":
                self.repos.workspace.warm_model(cs)
        return notes

    async def answer(
        self,
        kind: str,
        query: str,
        targets: list[Path],
        request: SearchRequest,
        notes: list[str],
        t0: float,
    ) -> SearchOutput:
        """Run ``request`` over ``targets`` and the fleet (in a worker thread) and say what it lacks
        (``SearchResponse.gaps``); the answer's size in tokens is in it and in ``codesight stats``."""
        engines = [self.repos.engine(r) for r in targets]
        try:
            hits = await anyio.to_thread.run_sync(lambda: self.repos.workspace.search(request, targets, self.fleet))
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None
        out = SearchOutput(
            query=query,
            mode=hits.mode or engines[0].settings.default_mode,
            results=[_hit(h) for h in hits],
            retrievers=hits.retrievers,
            index=[self.repos.state(r) for r in targets],
            notices=hits.notices + notes + [g.text for g in hits.gaps],
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

    async def search(
        self,
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
        Where the server has a self.fleet store (the team's repositories), its hits come too, each with
        its repository's name and commit; fleet_repo narrows them by a glob over those names."""
        t0 = time.perf_counter()
        if not query or not query.strip():
            raise ToolError('the query is empty: say what to look for, e.g. "parse config file"')
        top_k = _top_k(top_k)
        targets = [self.where(r) for r in roots] if roots else [self.where(repo_path)]
        targets = outermost(targets)  # nested roots are one index, not one each
        notes = await self.prepare(targets, ctx, mode)
        if fleet_repo and self.fleet is None:
            raise ToolError(
                "fleet_repo narrows a self.fleet store, and this server has none (codesight mcp --store URI)"
            )
        request = SearchRequest(
            query,
            checked(mode),
            Vectors.LOADED,
            Filters(file_glob, language, fleet_repo),
            top_k,
        )

        return await self.answer("search", query, targets, request, notes, t0)

    async def grep(
        self,
        pattern: str,
        ctx: Context,
        repo_path: str | None = None,
        fixed: bool = False,
        ignore_case: bool = False,
        word: bool = False,
        file_glob: str | None = None,
        language: str | None = None,
        context_lines: int = 0,
        limit: int = 100,
        roots: list[str] | None = None,
        fleet_repo: str | None = None,
    ) -> GrepOutput:
        """Every line that matches a regex (RE2 syntax, as ripgrep's) or, with fixed, a literal
        string, in the indexed files as they are on disk now (the index narrows which files are
        read; .gitignore'd, binary and secret files are left out). Each match: path, line, column,
        the line, the matched spans, and the enclosing definition ("class Cache > def get"), so
        that no file has to be read to know where it is. Case-sensitive unless ignore_case; word:
        whole words only. limit caps the lines (1 to 1000); truncated says there were more. Where
        the server has a fleet store, its repositories' lines come too, each with its commit;
        fleet_repo narrows them by a glob over their names."""
        t0 = time.perf_counter()
        if fleet_repo and self.fleet is None:
            raise ToolError("fleet_repo narrows a fleet store, and this server has none (codesight mcp --store URI)")
        if not 1 <= limit <= 1000:
            raise ToolError(f"limit must be between 1 and 1000 (got {limit})")
        if not 0 <= context_lines <= 20:
            raise ToolError(f"context_lines must be between 0 and 20 (got {context_lines})")
        targets = outermost([self.where(r) for r in roots] if roots else [self.where(repo_path)])
        notes = await self.prepare(targets, ctx, "bm25")
        case: Case = "insensitive" if ignore_case else "sensitive"
        options = GrepOptions(fixed=fixed, case=case, word=word, before=context_lines, after=context_lines)
        request = SearchRequest(
            pattern, filters=Filters(file_glob, language, fleet_repo), limit=limit + 1, grep=options
        )
        try:
            found = await anyio.to_thread.run_sync(lambda: self.repos.workspace.search(request, targets, self.fleet))
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None
        matches = [_match(h, str(targets[0])) for h in found[:limit]]
        return GrepOutput(
            pattern=pattern,
            matches=matches,
            truncated=len(found) > limit,
            notices=found.notices + notes,
            elapsed_ms=round((time.perf_counter() - t0) * 1000, 1),
        )

    async def find_related(
        self,
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
        is left out. roots: look across several repositories. Where the server has a self.fleet store,
        its code like that place comes too (and a symbol only the self.fleet has is looked up there)."""
        t0 = time.perf_counter()
        if not location or not location.strip():
            raise ToolError('say where: "path:line", a file, or a symbol')
        top_k = _top_k(top_k)
        if roots:
            targets = [self.where(r) for r in roots]
        elif repo_path is None and len(self.repos.roots) > 1:
            # "path:line" of any allowed root: each is looked in, the first that has it is the source
            targets = [self.where(str(r)) for r in self.repos.roots]
        else:
            targets = [self.where(repo_path)]
        targets = outermost(targets)
        notes = await self.prepare(targets, ctx, mode)
        request = SearchRequest(
            "",
            checked(mode),
            Vectors.LOADED,
            Filters(file_glob, language),
            top_k,
            like=location,
        )

        return await self.answer("find_related", location, targets, request, notes, t0)

    async def follow(
        self,
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
        repo = self.where(repo_path)
        await self.prepare([repo], ctx, "bm25")
        cs = self.repos.engine(repo)

        def run() -> NavigationOutput:
            nav = self.repos.workspace.follow(
                repo, action, symbol, max(1, min(limit, 1000)), glob=file_glob, language=language
            )
            out = NavigationOutput.model_validate({**nav.to_dict(), "index": self.repos.state(repo)})
            out.tokens = cs.token_count(out.model_dump_json())
            cs.record_served(action, len(nav), out.tokens, sorted({s.path for s in nav.sites}))
            return out

        try:
            out = await anyio.to_thread.run_sync(run)
        except CodeSightError as exc:
            raise ToolError(str(exc)) from None
        out.elapsed_ms = round((time.perf_counter() - t0) * 1000, 1)
        return out

    async def find_definition(
        self,
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
        return await self.follow("definitions", symbol, ctx, repo_path, file_glob, language, 1000)

    async def find_references(
        self,
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
        return await self.follow("references", symbol, ctx, repo_path, file_glob, language, limit)

    async def find_callers(
        self,
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
        return await self.follow("callers", symbol, ctx, repo_path, file_glob, language, limit)

    async def find_callees(
        self,
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
        return await self.follow("callees", symbol, ctx, repo_path, file_glob, language, limit)

    async def index(self, ctx: Context, repo_path: str | None = None, force_rebuild: bool = False) -> IndexOutput:
        """Bring a repository's index up to date (force_rebuild: from scratch; cached embeddings are
        reused). Returns as soon as BM25 search covers the repository, with progress notifications
        until then; embeddings continue in the background (see state.vector_coverage, or call
        status)."""
        repo = self.where(repo_path)
        job, started = self.repos.start_index(repo, force=force_rebuild)
        await _wait_lexical(job, ctx, self.repos.engine(repo))
        state = self.repos.state(repo)
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

    async def status(self, repo_path: str | None = None) -> StatusOutput:
        """What is indexed and how fresh it is: files, chunks, vector coverage, last index time,
        files changed on disk since, the model, and whether an indexer is running now."""
        repo = self.where(repo_path)
        cs = self.repos.engine(repo)
        st = await anyio.to_thread.run_sync(cs.status)
        files = st.get("changed_files")
        changed = (
            {"added": files["added"][:50], "modified": files["modified"][:50], "deleted": files["deleted"][:50]}
            if files
            else {}
        )
        return StatusOutput(
            state=self.repos.state(repo),
            pending=st.get("pending", 0),
            stale_files=st.get("changed"),
            changed=changed,
            index_bytes=st.get("index_bytes", 0),
            skipped=st.get("skipped") or {},
            read_only=bool(st.get("read_only")),
            notices=st.get("notices") or [],
        )

    def watch(self, repo_path: str | None = None) -> WatchOutput:
        """Keep a repository's index current while files change: each burst of saves is indexed as
        one batch (only changed files; only new text embedded), searchable within about a second."""
        repo = self.where(repo_path)
        return watch_repo(self.repos, repo)

    def unwatch(self, repo_path: str | None = None) -> WatchOutput:
        """Stop keeping a repository's index current (the index stays as it is)."""
        repo = self.where(repo_path)
        watcher = self.repos.workspace.unwatch(repo, timeout=2)
        if watcher is None:
            return WatchOutput(repo=str(repo), watching=False, message="was not being watched")
        return WatchOutput(
            repo=str(repo),
            watching=False,
            mode=watcher.mode,
            batches=watcher.batches,
            message=f"stopped watching after {watcher.batches} batches",
        )


# Each tool, as the server registers it: its method of Tools and what it promises.
TOOLS: list[tuple[str, ToolAnnotations]] = [
    ("search", ToolAnnotations(title="Search code", read_only_hint=True, open_world_hint=False)),
    ("grep", ToolAnnotations(title="Grep code", read_only_hint=True, open_world_hint=False)),
    ("find_related", ToolAnnotations(title="Find related code", read_only_hint=True, open_world_hint=False)),
    ("find_definition", ToolAnnotations(title="Find a definition", read_only_hint=True, open_world_hint=False)),
    ("find_references", ToolAnnotations(title="Find references", read_only_hint=True, open_world_hint=False)),
    ("find_callers", ToolAnnotations(title="Find callers", read_only_hint=True, open_world_hint=False)),
    ("find_callees", ToolAnnotations(title="Find callees", read_only_hint=True, open_world_hint=False)),
    (
        "index",
        ToolAnnotations(
            title="Index a repository",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
    ("status", ToolAnnotations(title="Index status", read_only_hint=True, open_world_hint=False)),
    (
        "watch",
        ToolAnnotations(
            title="Watch a repository",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
    (
        "unwatch",
        ToolAnnotations(
            title="Stop watching",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
]
