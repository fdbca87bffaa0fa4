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

import os
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from codesight_tui.core.errors import UsageError
from codesight_tui.core.ingest.paths import find_repo_root
from codesight_tui.mcp_server.state import Repos, watch_repo
from codesight_tui.mcp_server.tools import TOOLS, Tools
from codesight_tui.mcp_server.transport import guard_frame, run_stdio

if TYPE_CHECKING:
    from codesight_tui.core.fleet import Fleet

__all__ = ["Repos", "Tools", "build_server", "default_roots", "guard_frame", "serve", "too_broad"]

INSTRUCTIONS = """codesight searches local code repositories: BM25 and embeddings fused, with a ranking
tuned for code. Use `search` with plain words ("where do we retry failed uploads") or a symbol
(`RetryPolicy`), and `find_related` with "path:line" or a symbol for the code most like it. To
follow the code from a hit: `find_definition`, `find_references` (never comments or strings),
`find_callers` and `find_callees`, each with a name, "Scope.name" or "path:line". A
repository without an index is indexed on first use: answers come from BM25 within seconds while
vectors are computed in the background (see `index` in each answer). `watch` keeps an index
current while files change."""


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


def build_server(roots: list[Path], *, watch_roots: bool = False, fleet: Fleet | None = None) -> tuple[_Server, Repos]:
    """The ``MCPServer`` with codesight's tools (``tools.Tools``) over ``roots``; returns
    ``(server, repos)``. ``watch_roots``: every root that is a repository is watched from the start."""
    from codesight_tui import __version__

    repos = Repos(roots)
    server = _Server("codesight", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    tools = Tools(repos, fleet)
    for name, promises in TOOLS:
        server.tool(annotations=promises)(getattr(tools, name))
    if watch_roots:
        for root in repos.roots:
            if (root / ".git").exists():
                watch_repo(repos, root)
    return server, repos


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
        anyio.run(run_stdio, server)
    except KeyboardInterrupt:
        pass
    finally:
        repos.close()
    return 0
