"""The command line: ``codesight [PATH]`` opens the TUI; ``index``, ``search`` and ``status`` script
the same engine. Heavy modules are imported inside the commands so ``--help`` answers at once and
lexical search never loads torch."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.modes import ANSWERS, MODES, Vectors

if TYPE_CHECKING:
    from types import FrameType, TracebackType
    from typing import Any

    from rich.progress import Progress
    from typing_extensions import Self

    from codesight_tui.core.apps.evaluation import Suite
    from codesight_tui.core.apps.workspace import Workspace
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.index.indexer import Progress as IndexProgress
    from codesight_tui.core.search.searcher import SearchResult
    from codesight_tui.core.store.watch import Batch


class AskInClient(Exception):
    """A served call that must ask its user a question: the service hands it back, and the client
    runs it in its own process, where the terminal is."""


# Set by the warm service for the call its thread serves: ``can_ask``, whether that call's client
# has a terminal to ask on.
SERVED = threading.local()

MAX_LIMIT = 1000  # results per answer: more is a dump of the index, not a search (and a served call's reply)
COMMANDS = (
    "index",
    "search",
    "related",
    "def",
    "refs",
    "callers",
    "callees",
    "ask",
    "status",
    "watch",
    "mcp",
    "eval",
    "cache",
    "stats",
    "install",
    "uninstall",
    "service",
    "fleet",
)

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130  # bad input is a UsageError (2), a busy index an IndexBusyError (3)
# codesight def/refs/callers/callees: (command, core.search.navigate action, help)
FOLLOW = (
    ("def", "definitions", "where a symbol is defined"),
    ("refs", "references", "where a symbol is used (references grouped by file)"),
    ("callers", "callers", "what calls a function (each call with the definition it is made from)"),
    ("callees", "callees", "what a function calls (each with its definition, where the index has one)"),
)

# The service (``codesight_tui.service``) sets this to hand ``search`` and ``related`` its warm
# engines: its ``core.apps.workspace.Workspace``. None: a workspace (and new engines) per call.
WORKSPACE: Workspace | None = None


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (an ssh session closed), raised in the main thread as Ctrl-C is, so the
    same clean-up runs: the index stops at a batch boundary, worker processes and the writer lock
    are released. The exit code is 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def _exit_code(exc: KeyboardInterrupt) -> int:
    return 128 + exc.signum if isinstance(exc, Terminated) else EXIT_INTERRUPTED


ROOT_HELP = "a directory: the git repository around it is indexed, else the directory itself (default: .)"
YES_HELP = "index a large tree that is not a repository without asking"
LARGE_TREE_FILES = 20_000  # outside a repository, more files than this (or the home directory) ask first


def _count_files(root: Path, cap: int) -> int:
    """Files under ``root``, counting stops past ``cap`` (a home directory answers in a moment)."""
    n = 0
    stack = [root]
    while stack and n <= cap:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(Path(e.path))
                        elif e.is_file(follow_symlinks=False):
                            n += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return n


def resolve_root(path: str | Path, *, yes: bool = False, indexing: bool = True, cwd: str | None = None) -> Path:
    """The one root rule of every surface: the git repository around ``path``, else ``path``.
    A relative ``path`` is from ``cwd`` (default the current directory).

    Outside a repository, a tree of more than ``LARGE_TREE_FILES`` files (or the home directory)
    that has no index yet is indexed only after the user says yes: asked on a terminal, else
    ``--yes``."""
    from codesight_tui.core.ingest.paths import find_repo_root

    start = Path(cwd or ".", Path(path).expanduser())
    if not start.exists():
        raise UsageError(f"no such directory: {path}")
    if not start.is_dir():
        raise UsageError(f"not a directory: {path}")
    root = find_repo_root(start)
    if yes or not indexing or (root / ".git").exists():
        return root
    from codesight_tui.core.engine import CodeSight

    if CodeSight(root).has_index():
        return root
    home = root == Path.home().resolve()
    n = _count_files(root, LARGE_TREE_FILES)
    if not home and n <= LARGE_TREE_FILES:
        return root
    what = "your home directory" if home else f"over {LARGE_TREE_FILES:,} files"
    question = f"codesight: {root} is not a git repository and holds {what}. Index all of it?"
    if getattr(SERVED, "can_ask", False):  # served, for a client on a terminal: it asks there, not here
        raise AskInClient(question)
    if sys.stdin.isatty() and sys.stderr.isatty():
        sys.stderr.write(question + " [y/N] ")
        sys.stderr.flush()
        try:
            answer = sys.stdin.readline().strip().lower()
        except (OSError, KeyboardInterrupt):
            answer = ""
        if answer in ("y", "yes"):
            return root
        raise UsageError("nothing indexed: run codesight in a repository, or name a smaller directory")
    raise UsageError(
        f"{root} is not a git repository and holds {what}: run codesight in a repository,"
        " name a smaller directory, or pass --yes to index it anyway"
    )


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The CLI's parser, built once per process (10 ms: the service parses every call with it)."""
    return _build_parser()


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="codesight",
        usage="codesight [PATH ...]\n       codesight {index,search,related,ask,status,watch,mcp,install,...} ...",
        description="Local hybrid code search. `codesight [PATH]` opens the terminal UI.",
        epilog="Configuration: CODESIGHT_* environment variables or ~/.config/codesight/config.toml.",
    )
    from codesight_tui import __version__

    p.add_argument("--version", action="version", version=f"codesight {__version__}")
    sub = p.add_subparsers(
        dest="command", prog="codesight", metavar="{index,search,related,ask,status,watch,mcp,install,...}"
    )

    pi = sub.add_parser("index", help="build or update the index of a repository")
    pi.add_argument("path", nargs="?", default=".", help=ROOT_HELP)
    pi.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    pi.add_argument("--force", action="store_true", help="rebuild from scratch")
    pi.add_argument("--no-embed", action="store_true", help="lexical phase only (BM25 ready, no vectors)")
    pi.add_argument(
        "--static-only",
        action="store_true",
        help="lexical phase and the static tier's vectors (seconds), not the full model's",
    )
    pi.add_argument(
        "--full",
        action="store_true",
        help="the full model's vectors too, even on a CPU where full_model = auto leaves them out"
        " (tens of minutes for a large repository)",
    )
    pi.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="extra pattern to skip (repeatable)")
    pi.add_argument("--wait", action="store_true", help="wait for another indexer instead of failing")
    pi.add_argument("--json", action="store_true", help="print the summary as JSON")

    ps = sub.add_parser("search", help="search a repository (indexes it first if needed)")
    ps.add_argument("query", nargs="+", help="words, a question, or an identifier (quoted or not)")
    _search_options(ps)

    pr = sub.add_parser(
        "related",
        help="find the code most like a location or a symbol (more like this)",
        description="Code most like the chunk at PATH:LINE (or a file's first chunk, or a"
        " symbol's definition): BM25 over its names and the nearest vectors to its own, under"
        " the same ranking as search. The chunk itself is left out.",
    )
    pr.add_argument("target", help="PATH:LINE, a file, or a symbol (e.g. src/cache.py:42, RetryPolicy)")
    _search_options(pr)

    for command, action, what in FOLLOW:
        pf = sub.add_parser(
            command,
            help=what,
            description=what.capitalize() + ", from the index's definitions and"
            " references (tree-sitter, every language with a grammar). A name used in several"
            " places resolves through its file's definitions and imports where it can; otherwise"
            " every candidate is listed, and the answer says 'one of N candidates'.",
        )
        pf.add_argument("target", help="NAME, Scope.NAME, or PATH:LINE (the definition at or around that line)")
        pf.add_argument("--path", default=".", help=ROOT_HELP)
        pf.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
        pf.add_argument("--limit", "-n", type=int, default=200, help="most places listed (default 200)")
        pf.add_argument("--glob", "-g", default=None, help="only paths matching this gitignore-style glob")
        pf.add_argument("--lang", "-l", default=None, help="only this language (python, go, ...)")
        pf.add_argument("--json", action="store_true", help="machine-readable output")
        pf.add_argument("--vimgrep", action="store_true", help="one path:line:col:text line per place")
        pf.set_defaults(action=action)

    pa = sub.add_parser(
        "ask",
        help="answer a question from the code and documents, citing them (needs an LLM)",
        description="Search, then give the hits to the configured LLM and stream its answer,"
        " which cites them as [n]; the sources are listed after it. Back ends: anthropic, openai,"
        " azure, ollama (CODESIGHT_LLM_BACKEND; keys from ANTHROPIC_API_KEY, OPENAI_API_KEY,"
        " AZURE_OPENAI_API_KEY; OLLAMA_HOST). Nothing leaves the machine until one is set.",
    )
    pa.add_argument("question", help="what to ask, in words")
    pa.add_argument("--path", default=".", help=ROOT_HELP)
    pa.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    pa.add_argument("--top-k", "-k", type=int, default=None, help="search hits given as sources (default 8)")
    pa.add_argument("--glob", "-g", default=None, help="only sources whose path matches this glob")
    pa.add_argument(
        "--full",
        action="store_true",
        help="search with the full model's vectors too (loads the model: under a second through"
        " ONNX on a CPU, seconds through torch)",
    )
    pa.add_argument("--json", action="store_true", help="print the whole answer as JSON (no streaming)")

    pt = sub.add_parser("status", help="show what is indexed and how fresh it is")
    pt.add_argument("path", nargs="?", default=".", help=ROOT_HELP)
    pt.add_argument("--json", action="store_true", help="machine-readable output")

    pw = sub.add_parser(
        "watch",
        help="keep the index current as files change (Ctrl-C stops)",
        description="Bring the index up to date, then re-index changed files as they are"
        " saved: one batch per burst of changes (a branch switch is one), only changed files"
        " re-chunked, only new text embedded. One line per batch.",
    )
    pw.add_argument("path", nargs="?", default=".", help=ROOT_HELP)
    pw.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    pw.add_argument("--no-embed", action="store_true", help="keep BM25 current only (no vectors)")
    pw.add_argument("--json", action="store_true", help="one JSON object per batch")

    pm = sub.add_parser(
        "mcp",
        help="serve search to AI assistants over MCP (stdio)",
        description="A Model Context Protocol server on stdin/stdout with the tools search, find_related,"
        " find_definition, find_references, find_callers, find_callees, index, status, watch and unwatch. It reads only repositories under the allowed roots:"
        " each --root, else the repository around the current directory (and the config's"
        " saved repos).",
    )
    pm.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="PATH",
        help="a directory whose repositories the server may search (repeatable)",
    )
    pm.add_argument("--watch", action="store_true", help="watch every root that is a repository from the start")
    _store_options(pm)

    pc = sub.add_parser(
        "cache",
        help="show or prune the shared embedding cache",
        description="The embedding cache is shared by every repository (one file per model)."
        " `prune` drops vectors unused for --older-than days, then the least recently used"
        " until each file is under --max-size, and compacts the file.",
    )
    pc.add_argument("action", nargs="?", choices=("status", "prune"), default="status")
    pc.add_argument("--max-size", default=None, metavar="SIZE", help="e.g. 500MB, 2GB (prune)")
    pc.add_argument(
        "--older-than", type=float, default=None, metavar="DAYS", help="drop vectors unused this long (prune)"
    )
    pc.add_argument("--json", action="store_true", help="machine-readable output")

    for verb, text in (
        ("install", "add codesight's MCP server and when-to-use notes to your coding agents"),
        ("uninstall", "take codesight out of your coding agents' configuration"),
    ):
        pin = sub.add_parser(
            verb,
            help=text,
            description=text[0].upper() + text[1:] + ": Claude Code, Cursor, Codex CLI, Gemini CLI,"
            " OpenCode and GitHub Copilot in VS Code. With no AGENT, every one found here (its"
            " directory or its program); a named one is set up even if not found. Other entries"
            " and the file's layout are kept, a changed file is backed up as <name>.codesight.bak,"
            " and a file that does not parse is left alone. A second run changes nothing.",
        )
        pin.add_argument(
            "agents",
            nargs="*",
            metavar="AGENT",
            help="claude-code, cursor, codex, gemini, opencode, copilot (default: those found)",
        )
        pin.add_argument(
            "--project",
            nargs="?",
            const=".",
            default=None,
            metavar="DIR",
            help="the project's own files (.mcp.json, AGENTS.md, ...) in the repository around DIR"
            " (default here), not your user configuration",
        )
        pin.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
        pin.add_argument(
            "--force", action="store_true", help="replace (or remove) a codesight entry that install did not write"
        )

    psv = sub.add_parser(
        "service",
        help="start, stop or show your warm search service",
        description="The service keeps each repository it has served open and watched, and"
        " answers `codesight search` and `related` in tens of milliseconds over a Unix socket"
        " that only you can use. The first search starts it; it exits after"
        ' service_idle_minutes without a call. service = "off" in the config (or'
        " CODESIGHT_SERVICE=off) runs every command in its own process.",
    )
    psv.add_argument("action", nargs="?", choices=("status", "start", "stop"), default="status")
    psv.add_argument("--json", action="store_true", help="machine-readable output")

    pf = sub.add_parser(
        "fleet",
        help="one search over many repositories: index them into a shared store",
        description="A fleet store is a set of LanceDB tables at a path or an object-storage URI"
        " (s3://, gs://, az://) that everyone who can read it can search (search --store)."
        " `fleet index` reads each repository's HEAD commit through git (never its working"
        " tree, never writing to it), chunks and embeds what changed since the store's copy in"
        " worker processes here (or on a Ray cluster), and writes the rows. Credentials: the cloud's"
        " usual variables (AWS_*).",
    )
    fsub = pf.add_subparsers(dest="fleet_command", metavar="{index,status,remove}")
    fi = fsub.add_parser("index", help="index git URLs, clones or directories of clones into the store")
    fi.add_argument(
        "sources",
        nargs="+",
        help="a git URL, a clone, or a directory whose sub-directories are clones; NAME=SOURCE names"
        " it in the store (default: its last path part)",
    )
    fi.add_argument(
        "--model",
        choices=("static", "full"),
        default="static",
        help="the vectors: static (the static tier: thousands of chunks a second on a CPU; default)"
        " or full (the full model: a GPU's work)",
    )
    fi.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="a Ray cluster to run on (default: worker processes here, --workers at once)",
    )
    fi.add_argument("--workers", type=int, default=0, help="repositories indexed at once (default: the cores)")
    fi.add_argument("--local", action="store_true", help="no workers: one repository at a time in this process")
    fi.add_argument(
        "--gpus",
        type=float,
        default=0.0,
        metavar="N",
        help="GPUs (or a share of one, e.g. 0.25) each task asks the Ray cluster for: full-model tasks on GPU nodes",
    )
    fs = fsub.add_parser("status", help="the store's repositories: commit, files, chunks, last failure")
    fr = fsub.add_parser("remove", help="take repositories out of the store")
    fr.add_argument("names", nargs="+", help="repository names, as status lists them")
    for q in (fi, fs, fr):
        _store_options(q, required=True)
        q.add_argument("--json", action="store_true", help="machine-readable output")

    pst = sub.add_parser(
        "stats",
        help="what codesight's answers cost agents: searches and tokens per repository",
        description="Per repository: the searches served over MCP, the tokens their answers"
        " held, and the tokens of the files those hits came from (what reading the files would"
        " have cost). Counted with the model tokenizer codesight ships; kept on this machine.",
    )
    pst.add_argument("--json", action="store_true", help="machine-readable output")

    pe = sub.add_parser(
        "eval",
        help="measure retrieval quality on annotated queries (NDCG, MRR, recall)",
        description="Run annotated queries through the same search users get and print NDCG@10,"
        " NDCG@5, MRR@10 and recall@10: overall, per category and per mode. Several query files"
        " may be given, each with its own --path (in order); scores are averaged per file, then"
        " across files. A directory with repos.json and annotations/ (the multi-repository"
        " layout) evaluates every repository in it, with a table per language and the"
        " published scores of other tools beside ours when published.json is there.",
    )
    pe.add_argument(
        "queries",
        nargs="+",
        type=Path,
        metavar="QUERIES.json|DIR",
        help="list of {query, category, relevant: [path | {path, start_line, end_line}], secondary},"
        " or a multi-repository directory",
    )
    pe.add_argument(
        "--path",
        action="append",
        default=None,
        help="repository root of the query file(s): once for all, or once per file (default .)",
    )
    pe.add_argument(
        "--repo",
        action="append",
        default=None,
        metavar="NAME",
        help="with a directory: only this repository (repeatable)",
    )
    pe.add_argument(
        "--language",
        action="append",
        default=None,
        metavar="LANG",
        help="with a directory: only repositories of this language (repeatable)",
    )
    pe.add_argument(
        "--fold",
        default=None,
        metavar="NAME",
        help="with a directory: only the repositories of this fold of its folds.json (A or B):"
        " tune on one fold, confirm on the other",
    )
    pe.add_argument(
        "--mode",
        choices=(*ANSWERS, "all"),
        default="all",
        help="mode(s) to score (default all; fast: BM25 + the static tier, no full model)",
    )
    pe.add_argument(
        "--coverage",
        default=None,
        metavar="PCTS",
        help="score at these shares of chunks with vectors, e.g. 0,10,50,100 (rebuilds vectors"
        " from the cache, most valuable first)",
    )
    pe.add_argument("--limit", type=int, default=10, help="results per query (default 10)")
    pe.add_argument(
        "--no-index", action="store_true", help="score each index as it is, without bringing it up to date first"
    )
    pe.add_argument("--json", action="store_true", help="print everything, per-query ranks included, as JSON")
    return p


def _search_options(p: argparse.ArgumentParser) -> None:
    """What ``search`` and ``related`` share: where, how many, which mode, filters, the format."""
    p.add_argument(
        "--path",
        action="append",
        default=None,
        help=ROOT_HELP + "; repeat it to search several repositories as one ranked list",
    )
    p.add_argument("--all", action="store_true", help="search every repository saved in the config (repos)")
    p.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    p.add_argument("--limit", "-n", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--mode", choices=MODES, default=None, help="retrieval mode (default hybrid)")
    p.add_argument("--glob", "-g", default=None, help="only paths matching this gitignore-style glob")
    p.add_argument("--lang", "-l", default=None, help="only this language (python, go, ...)")
    p.add_argument(
        "--full",
        action="store_true",
        help="use the full model's vectors too (loads the model; default: BM25 + the static tier)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--vimgrep",
        action="store_true",
        help="one path:line:col:text line per hit (Vim's quickfix, Telescope, fzf-lua, Emacs' grep mode)",
    )
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="say why an answer came from this process rather than the warm service",
    )
    _store_options(p)
    p.add_argument(
        "--repo",
        default=None,
        metavar="GLOB",
        help="with a fleet store: only its repositories whose names match this glob",
    )


def _store_options(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--store",
        default=None,
        metavar="URI",
        help=(
            "the fleet store: a path or s3://bucket/prefix (gs://, az://)"
            if required
            else "also search this fleet store (a path or s3://bucket/prefix; default: the config's"
            " fleet_store), fused with the local index"
        ),
    )
    p.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="an S3-compatible server for the store (MinIO, Ceph; default: the config's fleet_endpoint)",
    )


def _tui_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="codesight", description="Open the codesight terminal UI.")
    p.add_argument(
        "path", nargs="*", default=None, help=ROOT_HELP + "; several paths are searched together as one ranked list"
    )
    p.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    _store_options(p)
    return p


def _safe(text: str) -> str:
    """Text from file names and contents, with control characters shown as ``?``: an escape
    sequence in a file must never drive the user's terminal."""
    from codesight_tui.core.text import printable

    return printable(text)


def _err(msg: str) -> None:
    """One line on stderr: a newline inside the message (a name given as ``$'a\\nb'``) is shown as ``\\n``."""
    try:
        print(f"codesight: {_safe(msg).replace(chr(10), chr(92) + 'n')}", file=sys.stderr)
    except OSError:  # the terminal is gone (SIGHUP from a closed ssh session): nobody to tell
        pass


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _ago(ts: float | None) -> str:
    if not ts:
        return "never"
    d = max(0, time.time() - ts)
    for unit, secs in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= secs:
            return f"{int(d // secs)}{unit} ago"
    return f"{int(d)}s ago"


def _progress_wanted(show: bool = True) -> bool:
    """Progress bars go to a terminal, or anywhere with CODESIGHT_PROGRESS=1."""
    return show and (sys.stderr.isatty() or os.environ.get("CODESIGHT_PROGRESS") == "1")


class _ProgressView:
    """Rich progress bars with ETA on stderr, one per phase; where stderr is no terminal (a log, a
    pipe), one plain line at least every ``PLAIN_EVERY_S`` seconds of a long run instead, so that
    `index --full > log 2>&1` is not silent for the 17 minutes it may take."""

    PLAIN_EVERY_S = 60.0

    def __init__(self, enabled: bool, plain: bool = False) -> None:
        self.enabled = enabled
        self.plain = plain and not enabled
        self.progress: Progress | None = None
        self.tasks: dict[str, Any] = {}  # rich's TaskIDs, by phase
        self.said_at = time.monotonic()
        self.phase_at: tuple[str, float, int] = ("", self.said_at, 0)  # a phase, when it began, its count then

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.progress is not None:
            self.progress.__exit__(kind, exc, tb)

    def suite(self, name: str, n: int, total: int) -> None:
        """A multi-repository run moves on to the next repository."""
        if self.progress is None or total < 2:
            return
        if "suite" not in self.tasks:
            self.tasks["suite"] = self.progress.add_task("repos", total=total)
        self.progress.update(self.tasks["suite"], completed=n - 1, description=f"{name[:10]:<10}")

    def __call__(self, ev: IndexProgress) -> None:
        if self.plain:
            self._line(ev)
        if self.progress is None:
            return
        label = {
            "scan": "scanning",
            "lexical": "lexical",
            "distill": "static model (once)",
            "static": "static vectors",
            "embed": "vectors",
        }[ev.phase]
        if ev.phase not in self.tasks:
            self.tasks[ev.phase] = self.progress.add_task(label, total=ev.total or None)
        self.progress.update(self.tasks[ev.phase], completed=ev.done, total=max(ev.total, 1))

    def _line(self, ev: IndexProgress) -> None:
        now = time.monotonic()
        if ev.phase != self.phase_at[0]:
            self.phase_at = (ev.phase, now, ev.done)
        if now - self.said_at < self.PLAIN_EVERY_S or not ev.total:
            return
        self.said_at = now
        _, began, at_start = self.phase_at
        rate = (ev.done - at_start) / max(now - began, 1e-6)
        left = f", about {max(1, round((ev.total - ev.done) / rate / 60))} min left" if rate > 0 else ""
        label = {"embed": "full model's vectors", "static": "static vectors", "lexical": "files"}.get(
            ev.phase, ev.phase
        )
        _err(f"{label}: {ev.done:,}/{ev.total:,} ({ev.done / ev.total:.0%}){left}")


def _summary(report: IndexReport) -> str:
    skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in sorted(report.skipped.items()))
    vec = f"{report.embedded} embedded, {report.cache_hits} from cache"
    if report.doc_views:
        vec += f" (+{report.doc_views} doc views embedded)"
    if report.vectors_pending:
        vec += f", {report.vectors_pending} pending"
    lines = [
        (
            f"indexed {report.files:,} files, {report.chunks:,} chunks in {report.seconds:.1f}s"
            f" (lexical {report.lexical_seconds:.1f}s, vectors {report.embed_seconds:.1f}s)"
        ),
        (
            f"  changed: {report.files_changed} files ({report.chunks_added} chunks added,"
            f" {report.chunks_removed} removed), {report.files_deleted} files deleted"
        ),
        f"  vectors: {vec}",
    ]
    if report.static_embedded or report.distill_seconds:
        lines.append(
            f"  static tier: {report.static_embedded:,} chunks in {report.static_seconds:.1f}s"
            + (
                f" (model distilled in {report.distill_seconds:.0f}s, once per machine)"
                if report.distill_seconds
                else ""
            )
        )
    if skipped:
        lines.append(f"  skipped: {skipped}")
    if report.secrets_masked:
        lines.append(f"  secrets: {report.secrets_masked} keys or tokens masked before indexing")
    return "\n".join(lines)


def _run_index(
    cs: CodeSight,
    *,
    embed: bool,
    force: bool = False,
    wait: bool = False,
    show: bool = True,
    static: bool | None = None,
) -> IndexReport:
    cancel = threading.Event()
    with _ProgressView(_progress_wanted(show), plain=show) as view:
        try:
            return cs.index(progress=view, embed=embed, force=force, cancel=cancel, wait=wait, static=static)
        except KeyboardInterrupt:
            cancel.set()
            raise


def _check_language(lang: str) -> str:
    """The language ``--lang`` names (any case, or an alias such as ``py``); an unknown one is a
    usage error that lists the languages codesight knows."""
    from codesight_tui.core.languages import normalize_language

    return normalize_language(lang)


def cmd_index(args: argparse.Namespace) -> int:
    from codesight_tui.core.engine import CodeSight

    # Our main module is guarded, so an index run's worker processes can spawn (lexical_processes).
    cs = CodeSight(resolve_root(args.path, yes=args.yes), exclude=args.exclude or None, lexical_processes=True)
    if args.full and (args.no_embed or args.static_only):
        raise UsageError(
            "--full computes the full model's vectors, --no-embed and --static-only leave them out: give one"
        )
    wanted = not (args.no_embed or args.static_only)
    embed = args.full or (wanted and cs.full_pass())
    report = _run_index(cs, embed=embed, force=args.force, wait=args.wait, static=args.static_only or not args.no_embed)
    if wanted and not embed and report.vectors_pending:
        why = "on a CPU (full_model = auto)" if cs.settings.full_model == "auto" else "(full_model = off)"
        cached = f" ({report.cache_hits:,} from the shared cache are used)" if report.cache_hits else ""
        _err(
            f"the full model's vectors are left out {why}{cached}: BM25 and the static tier answer;"
            f" `codesight index --full` computes the other {report.vectors_pending:,}"
            f" ({cs.full_estimate(report.vectors_pending)} here)"
        )
    for w in report.warnings:
        _err(w)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(_summary(report))
    return EXIT_OK


def _snippet(content: str, width: int = 100, lines: int = 3) -> list[str]:
    out = []
    for line in content.split("\n"):
        if line.strip():
            out.append("    " + (line[: width - 1] + "…" if len(line) > width else line))
        if len(out) >= lines:
            break
    return out


def _ready(cs: CodeSight, mode: str, full: bool) -> None:
    """Index a repository that has none yet before searching it (what a first search needs): the
    lexical phase and the static tier for a hybrid search, which answers from those in seconds;
    the full model's vectors only for ``--full`` or vector mode, or where the static tier is off.
    An index made without the static tier (a first search in bm25 mode, ``index --no-embed``) gets
    it before a hybrid search, which would otherwise load the full model to answer from BM25."""
    from codesight_tui.core.errors import IndexBusyError

    static = mode == "hybrid" and cs.static_path() is not None
    if cs.is_indexed():
        if not static or full or cs.static_ready() or cs.counts()["vectors"]:
            return
        _err(f"no static vectors for {cs.root} yet: computing them first")
    else:
        _err(f"no index for {cs.root} yet: indexing first")
    try:
        report = _run_index(cs, embed=mode == "vector" or (mode == "hybrid" and (full or not static)), static=static)
    except IndexBusyError:
        # Another process is building it: search what it has committed so far.
        _err("another codesight process is indexing this repository: searching what it has indexed so far")
    else:
        for w in report.warnings:
            _err(w)


def _search_roots(args: argparse.Namespace) -> list[Path]:
    from codesight_tui.core.config import load_settings

    paths = list(args.path or [])
    if args.all:
        saved = load_settings().repos
        if not saved:
            raise UsageError('no saved repositories: list them as repos = ["~/src/a", "~/src/b"] in the config file')
        paths += saved
    from codesight_tui.core.ingest.paths import outermost

    cwd = getattr(args, "cwd", None)  # a served call's own directory (the service's is /)
    return outermost([resolve_root(p, yes=args.yes, cwd=cwd) for p in paths or ["."]])


def cmd_search(args: argparse.Namespace) -> int:
    if isinstance(args.query, list):  # unquoted words, as an editor's :grep passes them
        args.query = " ".join(args.query)
    if not args.query.strip():
        raise UsageError('the query is empty: say what to look for, e.g. codesight search "parse config file"')
    _trailing_path(args)
    return _find(args, args.query)


def _trailing_path(args: argparse.Namespace) -> None:
    """``codesight search retry src/``, as one types ``rg retry src/``: a last word that names a
    file or folder in the repository (from the current directory) is where to look, not a query
    word. Only without -g, and never the query's only word."""
    words = args.query.split()
    if len(words) < 2 or args.glob or args.all or not re.search(r"[/.]", words[-1]):
        return
    cwd = Path(args.cwd or os.getcwd())
    candidate = cwd / Path(words[-1]).expanduser()
    try:
        if not candidate.exists():
            return
        # Only where the repository is: _find resolves (and, for a large tree, asks about) the root
        # once, later; resolving it here too asked twice.
        from codesight_tui.core.ingest.paths import find_repo_root

        base = Path(args.path[0]).expanduser() if args.path else cwd
        root = find_repo_root(base if base.is_absolute() else cwd / base)
        try:
            rel = candidate.resolve().relative_to(root)
        except ValueError:
            if args.path:  # --path said where: the last word is a query word after all
                return
            # Outside the repository here (`codesight search retry /path/to/other/repo`): that
            # path's repository is searched, as rg searches the path it is given.
            place = candidate.resolve()
            root = find_repo_root(place if place.is_dir() else place.parent)
            args.path = [str(root)]
            rel = place.relative_to(root)
    except (OSError, ValueError):
        return
    if not rel.parts:
        args.query = " ".join(words[:-1])  # the root itself: every path
        return
    args.glob = "/" + rel.as_posix() + ("/" if candidate.is_dir() else "")
    args.query = " ".join(words[:-1])
    if args.verbose:
        _err(f"{words[-1]} is a path here: searching {args.glob} for {args.query!r} (as rg does)")


def cmd_related(args: argparse.Namespace) -> int:
    if not args.target.strip():
        raise UsageError("say where: codesight related PATH:LINE, a file, or a symbol")
    from codesight_tui.core.search.related import from_cwd

    target = from_cwd(args.target, args.cwd or os.getcwd())  # a path as the user sees it, from where they are
    return _find(args, target, like=True)


def cmd_follow(args: argparse.Namespace) -> int:  # noqa: C901 - four formats of one answer, read top to bottom
    """``def``, ``refs``, ``callers`` and ``callees``: index what has no index, follow, print as text
    grouped by file, JSON or vimgrep lines; exit 1 when nothing is found."""
    from codesight_tui.core.search.related import from_cwd

    if not args.target.strip():
        raise UsageError(f"say what to follow: codesight {args.command} NAME, or PATH:LINE")
    if not 1 <= args.limit <= MAX_LIMIT * 10:
        raise UsageError(f"--limit takes 1 to {MAX_LIMIT * 10:,} places")
    if args.json and args.vimgrep:
        raise UsageError("--json and --vimgrep are two formats: give one")
    cwd = args.cwd or os.getcwd()
    root = resolve_root(args.path, yes=args.yes, cwd=args.cwd)
    workspace = _workspace()
    cs = workspace.engine(root)
    _ready(cs, cs.settings.default_mode, False)
    nav = workspace.follow(
        root,
        args.action,
        from_cwd(args.target, cwd),
        args.limit,
        glob=args.glob,
        language=_check_language(args.lang) if args.lang else None,
    )
    if args.json:
        print(json.dumps(nav.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK if nav else EXIT_ERROR

    def shown(path: str) -> str:
        full = root / path
        rel = os.path.relpath(full, cwd)
        return _safe(rel if Path(rel).parts[:1] != ("..",) else str(full))

    if args.vimgrep:
        places = (
            [(c.path, c.line, c.name, "") for c in nav.candidates]
            if args.action == "definitions"
            else [
                (s.target.path, s.target.line, s.name, "")
                if args.action == "callees" and s.target
                else (s.path, s.line, s.name, s.text)
                for s in nav.sites
            ]
        )
        texts = _line_texts(root, places)
        for path, line, name, text in places:
            text = text or texts.get((path, line), "")
            col = _word_column(text, name)
            print(f"{shown(path)}:{line}:{col}:{_safe(text.rstrip())}")
        return EXIT_OK if nav else EXIT_ERROR
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    what = nav.symbol.qualified if nav.symbol else nav.name
    head = f"{_safe(what).replace(chr(10), chr(92) + 'n')}: {nav.resolution}"
    if not nav and not nav.candidates:  # nothing to list: the one line on stderr says it
        head = ""
    if nav.symbol and args.action != "definitions":
        head += f", {nav.symbol.kind} at {shown(nav.symbol.path)}:{nav.symbol.line}"
    if not head:
        pass
    elif args.action == "definitions":
        print(paint(head, "1"))
        for c in nav.candidates:
            print(f"{paint(f'{shown(c.path)}:{c.line}', '35')}  {_safe(c.kind)} {_safe(c.qualified)}")
    elif args.action == "callees":
        print(paint(head, "1"))
        for site in nav.sites:
            to = (
                f"{shown(site.target.path)}:{site.target.line}  {_safe(site.target.kind)} {_safe(site.target.qualified)}"
                if site.target
                else ""
            )
            how = "" if site.resolution == "resolved" else f"  ({site.resolution})"
            print(f"{paint(_safe(site.name), '1')}  {paint(f'line {site.line}', '2')}  {to}{how}")
    else:
        print(paint(head, "1"))
        last = None
        for site in nav.sites:
            if site.path != last:
                print(paint(shown(site.path), "35"))
                last = site.path
            where = f" in {site.within.qualified}" if site.within else ""
            how = "" if site.resolution == "resolved" else f"; {site.resolution}"
            print(f"  {site.line:>5}  {_safe(site.text.strip()[:120])}  {paint(f'[{site.kind}{where}{how}]', '2')}")
    if nav.truncated:
        _err(f"more than {args.limit:,} places: the first {args.limit:,} are listed (--limit)")
    if not nav and (args.glob or args.lang):
        _err(f"no {args.action} of {nav.name} in the paths that -g/-l keep")
    elif not nav:
        _err(
            f"no {args.action} of {nav.name} in the index"
            if nav.candidates or args.action != "definitions"
            else f"{nav.name} is not defined in the index"
        )
    return EXIT_OK if nav else EXIT_ERROR


def _word_column(text: str, name: str) -> int:
    """The 1-based column of ``name`` as a whole word in ``text`` (else its first non-blank)."""
    import re

    m = re.search(rf"(?<![\w$]){re.escape(name.rsplit('.', 1)[-1])}(?![\w$])", text) if name else None
    return m.start() + 1 if m else len(text) - len(text.lstrip()) + 1


def _line_texts(root: Path, places: list[tuple[str, int, str, str]]) -> dict[tuple[str, int], str]:
    """The lines of the files the places name that have no text yet (definitions), read once per file."""
    out: dict[tuple[str, int], str] = {}
    for path in {p for p, _, _, text in places if not text}:
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError:
            continue
        for p, line, _, _ in places:
            if p == path and 0 < line <= len(lines):
                out[p, line] = lines[line - 1]
    return out


def _workspace() -> Workspace:
    """The warm service's workspace, or this process's own (its entry point is guarded, so
    index runs may spawn worker processes)."""
    from codesight_tui.core.apps.workspace import EngineOptions, Workspace

    return WORKSPACE or Workspace(EngineOptions(lexical_processes=True))


def _find(args: argparse.Namespace, query: str, like: bool = False) -> int:  # noqa: C901 - search and related share it: each flag's check is one branch, read top to bottom
    """``search`` and ``related``: index what has no index, run, print the hits as text, JSON or
    vimgrep lines; exit 1 when there are none."""
    from codesight_tui.core.apps.workspace import SearchRequest
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.modes import Vectors

    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit takes 1 to {MAX_LIMIT:,} results")
    if args.json and args.vimgrep:
        raise UsageError("--json and --vimgrep are two formats: give one")
    workspace = _workspace()
    fleet = _fleet(args, workspace)
    if fleet is not None and not args.path and not args.all and not _in_repository(args):
        roots = []  # outside any repository: the fleet alone
    else:
        roots = _search_roots(args)
    engines = [workspace.engine(root) for root in roots]
    if args.lang:
        args.lang = _check_language(args.lang)
    if engines:
        settings = engines[0].settings
    else:  # outside any repository: the fleet alone
        assert fleet is not None
        settings = fleet.settings
    mode = args.mode or settings.default_mode
    for cs in engines:
        _ready(cs, mode, args.full)
    several = len(engines) > 1 or fleet is not None
    if args.repo and fleet is None:
        raise UsageError("--repo narrows a fleet store's repositories: give --store too (or set fleet_store)")
    # A fresh process answers from BM25 and the static tier (no torch: well under a second) where
    # every repository has static vectors; --full (or no static tier) loads the full model, unless
    # no repository has a vector of it to search (loading it then took 21 s to answer the same).
    full = args.full
    if (
        full
        and engines
        and mode == "hybrid"
        and fleet is None
        and not any(cs.counts()["vectors"] for cs in engines)
        and all(cs.static_ready() for cs in engines)
    ):
        full = False
        pending = sum(cs.counts()["pending"] for cs in engines)
        _err(
            f"--full: no chunk has the full model's vectors yet, so BM25 and the static tier answer;"
            f" `codesight index --full` computes them ({engines[0].full_estimate(pending)} here)"
        )
    request = SearchRequest(
        query,
        tuple(roots),
        args.limit,
        mode,
        args.glob,
        args.lang,
        vectors=Vectors.LOAD if full else Vectors.STATIC,
        like=like,
        fleet=fleet,
        fleet_repo=args.repo,
    )
    fast = workspace.vectors_for(request, engines, mode) is Vectors.STATIC
    results = workspace.search(request)
    for n in results.notices:
        _err(n)
    if fast and results and not (args.json or args.vimgrep) and (args.verbose or sys.stderr.isatty()):
        full = sum(cs.counts()["vectors"] for cs in engines)
        if full:  # the answer came without vectors this machine has: say how to use them
            _err(
                f"answered from BM25 and the static tier; --full uses the full model's vectors too"
                f" ({full:,} chunks have them)"
            )
    for cs in engines if mode != "bm25" and not fast else ():
        pending = cs.counts()["pending"]
        if pending:
            how = (
                "`codesight index`" if cs.full_pass() else f"`codesight index --full`: {cs.full_estimate(pending)} here"
            )
            _err(
                f"index incomplete{f' ({cs.root.name})' if several else ''}: {pending:,} chunks without the full"
                f" model's vectors ({how})"
            )
    if args.json:
        out = []
        for r in results:
            d = r.to_dict()
            d["location"] = r.location
            d.pop("chunk_id", None)
            if not several:
                d.pop("repo", None)
            out.append(d)
        print(json.dumps(out, indent=2, ensure_ascii=False))
    elif args.vimgrep:
        terms = CodeSight.query_terms(query) if query else []
        for r in results:
            print(_safe(vimgrep_line(r, terms, getattr(args, "cwd", None))))
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        for r in results:
            where = f"[{_repo_label(r)}] " if several else ""
            # A document's place is its page, slide or (Word, which has no stable pages) its heading:
            # the lines of its extracted text mean nothing to a reader.
            loc = _safe(f"{where}{r.location if r.is_document else f'{r.path}:{r.start_line}-{r.end_line}'}")
            tag = retriever_tag(r)
            scope = r.scope
            if r.page or r.slide:  # the location says "p.12" / "slide 4"; a slide's title is left
                scope = scope.split(": ", 1)[1] if ": " in scope else ""
            if r.translations:  # the same page in other languages, folded into this one
                scope += f"  (+{r.translations} translation{'s' if r.translations > 1 else ''})"
            if color:
                print(f"\x1b[35m{loc}\x1b[0m  \x1b[1m{_safe(scope)}\x1b[0m  \x1b[2m[{tag} {r.score:.4f}]\x1b[0m")
            else:
                print(f"{loc}  {_safe(scope)}  [{tag} {r.score:.4f}]")
            print("\n".join(_safe(line) for line in _snippet(r.content)))
    if not results and not args.json:
        _err("no results")
    return EXIT_OK if results else EXIT_ERROR


def _repo_label(hit: SearchResult) -> str:
    """A hit's repository as the text output names it: a local root's name, a fleet
    repository's name and commit."""
    return f"{hit.repo}@{hit.commit[:10]}" if hit.commit else Path(hit.repo).name


def _in_repository(args: argparse.Namespace) -> bool:
    from codesight_tui.core.ingest.paths import find_repo_root

    start = Path(getattr(args, "cwd", None) or ".").resolve()
    return (find_repo_root(start) / ".git").exists()


def _fleet(args: argparse.Namespace, workspace: Workspace | None = None) -> Fleet | None:
    """The fleet store ``--store`` (or the config's ``fleet_store``) names, or None; kept in
    ``workspace`` (the warm service's) where one is given."""
    from codesight_tui.core.config import load_settings

    settings = load_settings()
    uri = getattr(args, "store", None) or settings.fleet_store
    if not uri:
        return None
    if "://" not in uri and getattr(args, "cwd", None):
        uri = os.path.join(args.cwd, os.path.expanduser(uri))
    if workspace is not None:
        return workspace.fleet(uri, getattr(args, "endpoint", None), settings)
    from codesight_tui.core.fleet import Fleet

    return Fleet(uri, getattr(args, "endpoint", None), settings)


def cmd_fleet(args: argparse.Namespace) -> int:
    if not getattr(args, "fleet_command", None):
        raise UsageError("say what to do: codesight fleet index, status or remove (codesight fleet --help)")
    fleet = _fleet(args)
    if fleet is None:
        raise UsageError("say which store: --store PATH or s3://bucket/prefix (or fleet_store in the config)")
    if args.fleet_command == "index":
        if args.workers < 0 or args.gpus < 0:
            raise UsageError("--workers and --gpus must be 0 or more")
        report = fleet.index(
            args.sources,
            model=args.model,
            address=args.ray_address,
            workers=args.workers,
            local=args.local,
            gpus=args.gpus,
            progress=None if args.json else (lambda m: _err(_safe(m))),
        )
        if args.json:
            print(json.dumps(report.to_dict(), indent=2))
        else:
            print(
                f"{len(report.indexed)} indexed, {len(report.unchanged)} unchanged, {len(report.failed)} failed"
                f" of {report.repos} repositories; {report.changed_files:,} files read, {report.chunks:,} chunks"
                f" ({report.embedded:,} embedded, {report.cache_hits:,} from cache), {report.stale_files:,} stale"
                f" files replaced; {report.rows:,} rows in {fleet.spec.uri}; {report.seconds:.1f} s on"
                f" {report.workers} worker{'s' if report.workers != 1 else ''}"
            )
        for name, why in report.failed:
            _err(_safe(f"{name}: {why}"))
        return EXIT_ERROR if report.failed else EXIT_OK
    if args.fleet_command == "remove":
        gone = fleet.remove(args.names)
        missing = sorted(set(args.names) - set(gone))
        if args.json:
            print(json.dumps({"removed": gone, "not_found": missing}))
        else:
            for name in gone:
                print(f"removed {name}")
        for name in missing:
            _err(_safe(f"{name}: not in {fleet.spec.uri}"))
        return EXIT_ERROR if missing else EXIT_OK
    repos = fleet.repos()
    if args.json:
        print(
            json.dumps(
                {
                    "store": fleet.spec.uri,
                    "model": fleet.store.meta(),
                    "size_bytes": fleet.size_bytes(),
                    "repos": [r.to_dict() for r in repos],
                },
                indent=2,
            )
        )
        return EXIT_OK
    meta = fleet.store.meta()
    size = fleet.size_bytes()
    print(
        f"{fleet.spec.uri}: {len(repos)} repositories, {sum(r.chunks for r in repos):,} chunks,"
        f" {meta.get('kind')} vectors of {meta.get('model')}" + (f", {size / 1e6:,.1f} MB" if size else "")
    )
    for r in repos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.indexed_at)) if r.indexed_at else "never"
        line = f"  {r.name}  {r.commit[:10] or '-'}  {r.files:,} files  {r.chunks:,} chunks  {when}"
        print(_safe(line + (f"  failed: {r.error}" if r.error else "")))
    return EXIT_OK


def vimgrep_line(hit: SearchResult, terms: list[str], cwd: str | None = None) -> str:
    """``path:line:col:text`` for a hit, as ``rg --vimgrep`` prints it: the path as the user can
    open it from here (relative to the current directory where it is below it), the hit's line
    (its definition's own line, else the first matching one), the column of the first query word
    on it (else of its first non-blank character), and that line's text."""
    full = Path(hit.repo) / hit.path if hit.repo else Path(hit.path)
    try:
        rel = os.path.relpath(full, cwd or os.curdir)
        shown = rel if Path(rel).parts[:1] != ("..",) else str(full)
    except ValueError:
        shown = str(full)
    if hit.commit:  # a fleet hit: the repository's name and commit, then its path there
        shown = f"{_repo_label(hit)}/{hit.path}"
    line = hit.line or hit.start_line
    lines = hit.content.split("\n")
    text = lines[line - hit.start_line] if 0 <= line - hit.start_line < len(lines) else (lines[0] if lines else "")
    low = text.lower()
    cols = [low.find(t.lower()) for t in terms if t and low.find(t.lower()) >= 0]
    col = min(cols) + 1 if cols else len(text) - len(text.lstrip()) + 1
    return f"{shown}:{line}:{col}:{text.rstrip()}"


def cmd_ask(args: argparse.Namespace) -> int:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.search.ask import llm_config

    if args.top_k is not None and not 1 <= args.top_k <= 50:
        raise UsageError("--top-k must be between 1 and 50")
    cs = CodeSight(resolve_root(args.path, yes=args.yes), lexical_processes=True)
    llm_config(cs.settings)  # a missing back end is said before any indexing
    _ready(cs, "hybrid", args.full)
    stream = cs.ask_stream(
        args.question,
        args.top_k,
        glob=args.glob,
        vectors=Vectors.STATIC if not args.full and cs.static_ready() else Vectors.LOAD,
    )
    for n in stream.notices:
        _err(n)
    if args.json:
        for _ in stream:
            pass
        print(json.dumps(stream.answer.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    try:
        for delta in stream:
            sys.stdout.write(_safe(delta))
            sys.stdout.flush()
    finally:
        if stream.answer.text:
            sys.stdout.write("\n")
    answer = stream.answer
    if answer.cut:
        _err(answer.cut)
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    cited = set(answer.citations)
    print("\nSources:")
    for n, _hit in enumerate(answer.sources, start=1):
        label = _safe(answer.source_label(n))
        mark = "" if n in cited else "  (not cited)"
        print(f"  [{n}] \x1b[35m{label}\x1b[0m{mark}" if color else f"  [{n}] {label}{mark}")
    usage = answer.usage or {}
    tokens = f", {usage.get('input_tokens')} tokens in, {usage.get('output_tokens')} out" if usage else ""
    _err(f"{answer.backend} {answer.model}: {answer.seconds:.1f} s{tokens}")
    return EXIT_OK


def _batch_line(batch: Batch, report: IndexReport) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for kind in batch.changes.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "time": time.strftime("%H:%M:%S"),
        "full": batch.full,
        "paths": len(batch.changes),
        "changes": kinds,
        "files_changed": report.files_changed,
        "files_deleted": report.files_deleted,
        "chunks_added": report.chunks_added,
        "chunks_removed": report.chunks_removed,
        "embedded": report.embedded,
        "cache_hits": report.cache_hits,
        "vectors_pending": report.vectors_pending,
        "seconds": round(report.seconds, 3),
        "warnings": report.warnings,
    }


def cmd_watch(args: argparse.Namespace) -> int:
    import threading

    from codesight_tui.core.engine import CodeSight

    cs = CodeSight(resolve_root(args.path, yes=args.yes), lexical_processes=True)

    def on_batch(batch: Batch, report: IndexReport) -> None:
        line = _batch_line(batch, report)
        if args.json:
            print(json.dumps(line), flush=True)
            return
        what = "caught up" if batch.full else ", ".join(f"{n} {k}" for k, n in sorted(line["changes"].items()))
        vec = f"; {report.embedded} embedded" + (
            f", {report.vectors_pending:,} pending" if report.vectors_pending else ""
        )
        print(
            f"{line['time']}  {what}: {report.files_changed} files re-indexed, +{report.chunks_added}"
            f" -{report.chunks_removed} chunks{vec if not args.no_embed else ''} ({report.seconds:.2f}s)",
            flush=True,
        )
        for w in report.warnings:
            _err(w)

    # The full model's vectors as `index` has them (CodeSight.full_pass); the static tier's always.
    watcher = cs.watch(on_batch, embed=not args.no_embed and cs.full_pass(), static=not args.no_embed)
    _err(f"watching {cs.root} ({'file events' if watcher.mode == 'events' else 'polling'}); Ctrl-C stops")
    done = threading.Event()
    try:
        while not done.wait(0.5):
            for e in watcher.errors:
                _err(e)
            watcher.errors.clear()
    except KeyboardInterrupt as exc:
        watcher.stop(timeout=2)
        _err("stopped watching: everything indexed so far is saved")
        return _exit_code(exc) if isinstance(exc, Terminated) else EXIT_OK
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from codesight_tui.mcp_server import serve

    return serve(args.root, watch=args.watch, fleet=_fleet(args))


def cmd_status(args: argparse.Namespace) -> int:
    from codesight_tui.core.engine import CodeSight

    cs = CodeSight(resolve_root(args.path, indexing=False))
    st = cs.status()
    for n in st.get("notices", []):  # a rebuilt or read-only index is said, never silent
        _err(n)
    if args.json:
        print(json.dumps(st, indent=2))
        return EXIT_OK
    if not st["indexed"]:
        print(f"{st['root']}: not indexed yet (run `codesight index {args.path}`)")
        return EXIT_OK
    changed = st.get("changed_files")
    detail = (
        ", ".join(f"{len(changed[k])} {k}" for k in ("added", "modified", "deleted") if changed and changed[k])
        if changed
        else ""
    )
    rows = [
        ("root", st["root"]),
        ("index", f"{st['index_dir']} ({_human_size(st['index_bytes'])})"),
        ("files", f"{st['files']:,}"),
        ("chunks", f"{st['chunks']:,}"),
        (
            "vectors",
            f"{st['vectors']:,} done, "
            + (
                f"{st['pending']:,} pending"
                if st.get("full_pass", True)
                else f"{st['pending']:,} not computed on a CPU (`codesight index --full`: {st['full_estimate']})"
            ),
        ),
        (
            "model",
            f"{st['model']}"
            + (f" ({st['dim']}d)" if st.get("dim") else "")
            + (f", runs on {st['backend']}" if st.get("backend") else ""),
        ),
        (
            "static",
            f"{st['static_vectors']:,} vectors ({st['static_coverage']:.0%}), {st['static_model']}"
            if st.get("static_model")
            else "off",
        ),
        (
            "cache",
            f"{cache['entries']:,} vectors, {_human_size(cache['bytes'])} (shared; `codesight cache`)"
            if (cache := st.get("cache"))
            else "none yet",
        ),
        (
            "indexed",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st["last_indexed"])) + f" ({_ago(st['last_indexed'])})"
            if st["last_indexed"]
            else "never",
        ),
        ("changed", f"{st['changed']} files on disk since" + (f" ({detail})" if detail else "")),
        ("skipped", ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in st["skipped"].items()) or "none"),
    ]
    sec: dict[str, Any] = dict(st.get("secrets") or {})
    rows.append(
        (
            "secrets",
            (
                f"{sec.get('files_skipped', 0):,} files not read (named like secrets),"
                f" {sec.get('masked', 0):,} keys or tokens masked in {sec.get('files_masked', 0):,}"
                " files"
            ),
        )
    )
    docs: dict[str, Any] = dict(st.get("documents") or {})
    if docs.get("indexed") or docs.get("skipped"):
        bad = docs.get("skipped") or {}
        listed = ", ".join(f"{p} ({why.replace('_', ' ')})" for p, why in list(bad.items())[:3])
        more = f", {len(bad) - 3:,} more (status --json)" if len(bad) > 3 else ""
        rows.append(
            ("docs", f"{docs.get('indexed', 0):,} indexed" + (f"; skipped {_safe(listed)}{more}" if bad else ""))
        )
    for k, v in rows:
        print(f"{k:<9}{v}")
    return EXIT_OK


def _parse_size(text: str) -> int:

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise UsageError(f"bad size {text!r}: use e.g. 500MB or 2GB")
    return int(float(m.group(1)) * 1024 ** " KMGT".index((m.group(2) or " ").upper()))


def cmd_cache(args: argparse.Namespace) -> int:
    import sqlite3

    from codesight_tui.core.config import load_settings
    from codesight_tui.core.index.cache import EmbeddingCache, cache_files
    from codesight_tui.core.ingest.paths import tree_bytes

    settings = load_settings()
    files = cache_files(settings.cache_dir)
    if args.action == "prune":
        max_bytes: int | None = None
        if args.max_size is None and args.older_than is None:
            max_bytes = settings.cache_max_mb * 1024 * 1024
        elif args.max_size is not None:
            max_bytes = _parse_size(args.max_size)
        if args.older_than is not None and args.older_than < 0:
            raise UsageError("--older-than must be at least 0 days")
        older = args.older_than * 86400 if args.older_than is not None else None
        try:
            out = [EmbeddingCache.open_file(f).prune(max_bytes=max_bytes, older_than_s=older) for f in files]
        except sqlite3.Error as exc:  # read-only, locked by an indexer, or damaged
            raise CodeSightError(f"cannot prune the embedding cache in {settings.cache_dir}: {exc}") from None
        if args.json:
            print(json.dumps(out, indent=2))
        for r in [] if args.json else out:
            print(
                f"{Path(r['path']).name}: removed {r['removed']:,} vectors, {r['entries']:,} left;"
                f" {_human_size(r['bytes_before'])} -> {_human_size(r['bytes_after'])}"
            )
        if not files and not args.json:
            print(f"no embedding cache in {settings.cache_dir}")
        return EXIT_OK
    try:
        stats = [EmbeddingCache.open_file(f).stats() for f in files]
    except sqlite3.Error as exc:
        raise CodeSightError(f"cannot read the embedding cache in {settings.cache_dir}: {exc}") from None
    # Beside the embedding caches: the static model, the ONNX export and whatever else lives there.
    cache_dir = Path(settings.cache_dir).expanduser()
    counted = {Path(f).name for f in files} | {Path(f).name + s for f in files for s in ("-wal", "-shm")}
    other: dict[str, int] = {}
    if cache_dir.is_dir():
        for entry in sorted(cache_dir.iterdir()):
            if entry.name not in counted:
                other[entry.name + ("/" if entry.is_dir() else "")] = tree_bytes(entry)
    total = sum(int(st["bytes"]) for st in stats) + sum(other.values())
    if args.json:
        print(
            json.dumps(
                {
                    "cache_dir": str(settings.cache_dir),
                    "max_mb": settings.cache_max_mb,
                    "models": stats,
                    "other": other,
                    "total_bytes": total,
                },
                indent=2,
            )
        )
        return EXIT_OK
    print(
        f"{settings.cache_dir}: {_human_size(total)} in all (embedding caches capped at"
        f" {settings.cache_max_mb:,} MB per model)"
    )
    for st in stats:
        print(f"  {Path(st['path']).name}: {st['entries']:,} vectors, {_human_size(st['bytes'])}")
    for name, size in other.items():
        print(f"  {name}: {_human_size(size)}")
    if not stats and not other:
        print("  empty")
    return EXIT_OK


def _eval_suites(args: argparse.Namespace) -> tuple[list[Suite] | list[tuple[Path, Path]], dict[str, Any]]:
    """The suites ``codesight eval`` was given: query files with --path, or one collection directory."""
    from codesight_tui.core.apps.evaluation import is_collection, load_collection

    if len(args.queries) == 1 and args.queries[0].is_dir():
        if not is_collection(args.queries[0]):
            raise UsageError(f"{args.queries[0]} is a directory without repos.json and annotations/")
        if args.path:
            raise UsageError("--path goes with query files; a directory names its own repositories")
        return load_collection(args.queries[0], args.repo, args.language, args.fold)
    if args.repo or args.language or args.fold:
        raise UsageError("--repo, --language and --fold select repositories of a directory")
    paths = args.path or ["."]
    if len(paths) == 1:
        paths = paths * len(args.queries)
    if len(paths) != len(args.queries):
        raise UsageError(f"give --path once, or once per query file ({len(args.queries)})")
    return list(zip(args.queries, map(Path, paths), strict=False)), {}


def _coverage(text: str | None) -> list[float] | None:

    if text is None:
        return None
    try:
        pcts = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        pcts = []
    if not pcts or any(not 0 <= x <= 100 for x in pcts):
        raise UsageError("--coverage takes percentages from 0 to 100, e.g. 0,10,50,100")
    return [x / 100 for x in pcts]


def cmd_install(args: argparse.Namespace) -> int:
    from codesight_tui import agents
    from codesight_tui.core.config import Settings
    from codesight_tui.core.ingest.paths import find_repo_root

    remove = args.command == "uninstall"
    home = Path.home()
    env = dict(os.environ)
    names = list(args.agents)
    project = None
    if args.project is not None:
        where = args.project
        # `install --project claude-code cursor`: --project takes an optional DIR, and argparse
        # gives it the first agent's name; an agent's name that is no directory here is an agent.
        if where.lower() in agents.BY_NAME and not Path(where).is_dir():
            names.insert(0, where)
            where = "."
        start = Path(where).expanduser()
        if not start.is_dir():
            raise UsageError(f"no such directory: {where}")
        project = find_repo_root(start.resolve())
    chosen = agents.select(names, home, env, project)
    if not chosen:
        _err(
            "no coding agent found here (looked for "
            + ", ".join(a.name for a in agents.AGENTS)
            + "): name one, e.g. codesight install claude-code"
        )
        return EXIT_ERROR
    ledger = agents.Ledger(Path(Settings().data_dir).expanduser() / "installed.json")
    failed = 0
    touched = 0
    noted = False
    # One agent at a time, planned after the one before it was carried out: Codex and OpenCode
    # share AGENTS.md, and each must see what the other did to it.
    for a, _named in chosen:
        try:  # one agent's unreadable or unsafe file is said, and the others go on
            p = agents.plan(a, home=home, env=env, project=project, remove=remove, ledger=ledger, force=args.force)
        except CodeSightError as exc:
            _err(f"{a.name}: {exc}")
            failed += 1
            continue
        noted = noted or bool(p.notes)
        note = "" if p.detected or remove else " (not found here; set up because you named it)"
        if project is not None and p.agent.project_config is None:
            print(f"{p.agent.name}: has no project configuration; nothing to do")
            continue
        for line in p.notes:
            print(f"{p.agent.name}: {_home(line)}")
        if not p.changed:
            if not args.dry_run:
                for c in p.changes:  # the ledger learns which agents share a file no run had to change
                    agents.apply(c, ledger)
            if not p.notes:
                state = "not set up" if remove else "already set up"
                print(f"{p.agent.name}: {state} ({_home(p.changes[0].path)}), nothing changed{note}")
            continue
        touched += 1
        if args.dry_run:
            print(f"{p.agent.name}: would change{note}")
            for c in p.changed:
                print(_safe(c.diff()), end="")
            continue
        done = []
        for c in p.changes:
            try:
                backup = agents.apply(c, ledger)
            except OSError as exc:
                _err(f"{p.agent.name}: cannot write {_home(c.path)}: {exc.strerror or exc}")
                failed += 1
                break
            if not c.changed:
                continue
            what = (
                "restored"
                if c.restores and c.after is not None
                else "removed"
                if c.after is None
                else "updated"
                if c.before is not None
                else "created"
            )
            done.append(f"{what} {_home(c.path)}" + (f" (first backup {_home(backup)})" if backup else ""))
        print(f"{p.agent.name}: " + "; ".join(done) + note)
    if not touched and not args.dry_run and not failed:
        print("nothing changed")
    if not remove and touched and not args.dry_run and not failed:
        print("restart the agent (or reload its MCP servers) to use codesight")
    return EXIT_ERROR if failed or noted else EXIT_OK


def retriever_tag(hit: SearchResult) -> str:
    """Which lists found a hit, as the plain output says it: ``bm25+static``, ``bm25+vec``, ``vec``,
    ``definition`` (a definition no list ranked). It said ``bm25+vec`` for a static-tier hit."""
    parts = [
        name for name, rank in (("bm25", hit.bm25_rank), ("static", hit.static_rank), ("vec", hit.vector_rank)) if rank
    ]
    return "+".join(parts) or ("definition" if hit.definition else "bm25")


def _home(path: Path | str) -> str:
    """``path`` with the home directory written ``~``."""
    try:
        return "~/" + Path(path).relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def cmd_service(args: argparse.Namespace) -> int:
    from codesight_tui import client

    def call(cmd: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(status, None)`` from a running service, ``(None, why)`` where none answers."""
        got: dict[str, Any] = {}
        try:
            client.request(
                {"v": client.PROTOCOL, "install": client.install_key(), "env": client.env_digest(), "cmd": cmd},
                got.update,
            )
        except client.Unserved as exc:
            return None, str(exc)
        return got.get("status", {}), None

    try:
        log = client.service_file("log")
    except OSError as exc:  # e.g. the runtime directory is a link to another user's
        _err(f'no runtime directory for the service: {exc} (fix it, or set service = "off")')
        return EXIT_ERROR
    if args.action == "stop":
        st, why = call("stop")
        if st is None:
            print(f"codesight service: not running ({why})")
            return EXIT_OK
        for _ in range(100):  # its socket goes once its engines are closed
            if not os.path.exists(client.socket_path()):
                break
            time.sleep(0.05)
        print("codesight service: stopped")
        return EXIT_OK
    if args.action == "start":
        if not client.enabled():
            raise UsageError('the service is off in the config (service = "off" or CODESIGHT_SERVICE=off)')
        if call("ping")[0] is None:
            client.start_service(wait=30.0)
    st, why = call("ping")
    if args.json:
        print(json.dumps({"running": True, **st} if st is not None else {"running": False, "why": why}, indent=2))
    elif st is None:
        print(f"codesight service: not running ({why})")
    else:
        print(
            f"codesight service: running, pid {st['pid']}, up {st['uptime_s']:.0f} s, {st['served']:,} calls"
            f" served; socket {st['socket']}"
        )
        idle = st["idle_exit_s"]
        print(f"  exits after {idle / 60:g} min without a call" if idle else "  never exits on its own")
        for r in st["repositories"]:
            print(f"  {r['root']}" + ("  (watching)" if r["watching"] else ""))
    if args.action == "start" and st is None:
        _err(f"the service did not start: {why} (see {log})")
        return EXIT_ERROR
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from codesight_tui.core.engine import CodeSight

    rows = CodeSight.usage_stats()
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return EXIT_OK
    if not rows:
        print("no searches served to agents yet (codesight mcp counts them)")
        return EXIT_OK
    print(
        f"{'repository':<40} {'searches':>8} {'hits':>6} {'tokens returned':>15} {'tokens of the files':>19} {'saved':>6}"
    )
    for r in rows:
        print(
            f"{_safe(_short(r.repo, 40)):<40} {r.searches:>8,} {r.results:>6,} {r.tokens:>15,} {r.file_tokens:>19,}"
            f" {r.saved:>6.0%}"
        )
    return EXIT_OK


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def cmd_eval(args: argparse.Namespace) -> int:
    from codesight_tui.core.apps.evaluation import evaluate

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    suites, published = _eval_suites(args)
    coverage = _coverage(args.coverage)
    modes = list(ANSWERS) if args.mode == "all" else [args.mode]
    if coverage is not None and args.mode == "all":
        modes = ["hybrid"]
    progress = _ProgressView(_progress_wanted(not args.json))
    with progress:
        report = evaluate(
            suites,
            modes,
            limit=args.limit,
            index=not args.no_index,
            progress=progress,
            processes=True,
            published=published,
            coverage=coverage,
            on_suite=progress.suite,
        )
    if args.json:
        print(json.dumps(report, indent=2))
        return EXIT_OK
    print_eval_report(report)
    return EXIT_OK


def print_eval_report(report: dict[str, Any]) -> None:
    """The tables of ``codesight eval``: each metric per category and mode, NDCG@10 per language
    beside the published peers, and query latency."""
    from codesight_tui.core.apps.evaluation import METRICS

    summary = report["modes"]
    labels = list(summary)
    cats = sorted({c for m in summary.values() for c in m["categories"]})
    n = sum(len(f["modes"][labels[0]]["queries"]) for f in report["files"])
    print(f"{n} queries in {len(report['files'])} file(s); scores averaged per file, then across files\n")
    for metric in METRICS:
        print(f"{metric:<14}" + "".join(f"{c:>14}" for c in [*cats, "overall"]))
        for label in labels:
            row = [summary[label]["categories"].get(c, {}).get(metric, float("nan")) for c in cats]
            print(f"  {label:<12}" + "".join(f"{v:>14.3f}" for v in row + [summary[label]["overall"][metric]]))
        print()
    peers = report.get("published") or {}
    langs = sorted({lang for m in summary.values() for lang in m["languages"]})
    if len(langs) > 1 or peers:
        cols = labels + list(peers)
        print("ndcg@10 by language" + (" (published peers on the same repositories)" if peers else ""))
        print(f"{'language':<12}{'repos':>6}" + "".join(f"{c[:13]:>14}" for c in cols))
        for lang in langs:
            first = summary[labels[0]]["languages"][lang]
            row = [summary[lb]["languages"][lang]["ndcg@10"] for lb in labels]
            row += [peers[k]["languages"].get(lang, float("nan")) for k in peers]
            print(f"{lang:<12}{first['repos']:>6}" + "".join(f"{v:>14.3f}" for v in row))
        row = [summary[lb]["overall"]["ndcg@10"] for lb in labels] + [peers[k]["ndcg@10"] for k in peers]
        print(f"{'mean':<12}{len(report['files']):>6}" + "".join(f"{v:>14.3f}" for v in row))
        print()
    for label in labels:
        lat = summary[label]["latency_ms"]
        print(f"latency {label:<10} p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")


def cmd_tui(args: argparse.Namespace) -> int:
    paths = args.path or ["."]
    _not_a_typo(paths[0], args.cwd)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        for p in paths:
            resolve_root(p, indexing=False)  # a bad path is still named first
        raise UsageError(
            "the terminal UI needs a terminal; to search from a script or a pipe use"
            ' `codesight search "QUERY"` (add --json for machine-readable output)'
        )
    from codesight_tui.core.ingest.paths import outermost

    roots = outermost([resolve_root(p, yes=args.yes) for p in paths])
    try:
        from codesight_tui.tui.app import run_app
    except ImportError:
        raise CodeSightError("the terminal UI is not available in this build; use `codesight search`") from None
    return run_app(roots[0], roots[1:], fleet=_fleet(args))


def _not_a_typo(word: str, cwd: str | None) -> None:
    """``codesight serach x``: a first word that is no directory but close to a command is said to
    be a mistyped command, with the nearest one, as git does (exit 2)."""
    import difflib

    if os.sep in word or Path(cwd or os.getcwd(), word).expanduser().exists():
        return
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if near:
        raise UsageError(f"'{word}' is not a command or a directory; the most similar command is `{near[0]}`")


def main(argv: list[str] | None = None) -> int:
    """Run one command in this process (the console script is ``client.main``, which sends
    ``search`` and ``related`` to the warm service first)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(argv, signals=True)


def run(argv: list[str], *, cwd: str | None = None, signals: bool = False) -> int:
    """One command: its exit code, every error one line on stderr. ``cwd`` is the directory its
    relative paths are from (a served call's client's); ``signals`` turns SIGTERM and SIGHUP into
    the Ctrl-C path (only a main thread can)."""
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        args = _parser().parse_args(argv)
        handler = {
            "index": cmd_index,
            "search": cmd_search,
            "related": cmd_related,
            "def": cmd_follow,
            "refs": cmd_follow,
            "callers": cmd_follow,
            "callees": cmd_follow,
            "stats": cmd_stats,
            "install": cmd_install,
            "uninstall": cmd_install,
            "ask": cmd_ask,
            "status": cmd_status,
            "watch": cmd_watch,
            "mcp": cmd_mcp,
            "eval": cmd_eval,
            "cache": cmd_cache,
            "service": cmd_service,
            "fleet": cmd_fleet,
        }.get(args.command)
    else:
        args = _tui_parser().parse_args(argv)
        handler = cmd_tui
    if handler is None:
        _parser().print_help()
        return EXIT_OK
    args.cwd = cwd
    if signals and handler is not cmd_tui and handler is not cmd_mcp:  # those two handle the signals themselves
        import signal

        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_terminated)
    try:
        return handler(args)
    except CodeSightError as exc:
        _err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt as exc:
        if args.command in ("install", "uninstall", "stats", "service", "cache"):
            _err("interrupted: each file is written whole or not at all")
        else:
            _err("interrupted: everything indexed so far is saved; run the same command to resume")
        return _exit_code(exc)
    except BrokenPipeError:
        return EXIT_OK
