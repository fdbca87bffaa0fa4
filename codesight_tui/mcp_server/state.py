"""The MCP server's state: its allowed roots over the core's ``Workspace`` (``Repos``), and a
repository watched on request."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.core.apps.workspace import EngineOptions, Workspace
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.ingest.paths import find_repo_root
from codesight_tui.mcp_server.schemas import IndexState, WatchOutput

if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.process.jobs import IndexJob


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


def watch_repo(repos: Repos, repo: Path) -> WatchOutput:
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
