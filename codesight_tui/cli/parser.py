"""The command line's grammar: the commands, their options and help, built once per process. Its
messages (usage errors, ``--help``) go to the current call's streams (``cli.context``)."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.cli.context import current
from codesight_tui.core.modes import ANSWERS, MODES

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

MAX_LIMIT = 1000  # results per answer: more is a dump of the index, not a search (and a served call's reply)
COMMANDS = (
    "index",
    "search",
    "related",
    "grep",
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
# codesight def/refs/callers/callees: (command, core.search.navigate action, help)
FOLLOW = (
    ("def", "definitions", "where a symbol is defined"),
    ("refs", "references", "where a symbol is used (references grouped by file)"),
    ("callers", "callers", "what calls a function (each call with the definition it is made from)"),
    ("callees", "callees", "what a function calls (each with its definition, where the index has one)"),
)
ROOT_HELP = "a directory: the git repository around it is indexed, else the directory itself (default: .)"
YES_HELP = "index a large tree that is not a repository without asking"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors and help go to the current call's streams: a served
    call's to its client, not to the service's own stdout."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            ctx = current()
            (ctx.err if file is sys.stderr else ctx.out).write(message)


def grep_options(pg: argparse.ArgumentParser) -> None:
    """``codesight grep``'s arguments: ripgrep's names for ripgrep's flags."""
    pg.add_argument("pattern", help="a regex (RE2 syntax, as ripgrep's), or a literal string with -F")
    pg.add_argument(
        "paths", nargs="*", metavar="PATH", help="repositories, or a folder or file inside one (default: .)"
    )
    pg.add_argument("-F", "--fixed-strings", action="store_true", help="the pattern is a literal string")
    pg.add_argument("-i", "--ignore-case", action="store_true", help="case-insensitive")
    pg.add_argument(
        "-S", "--smart-case", action="store_true", help="case-insensitive unless the pattern has an upper-case letter"
    )
    pg.add_argument("-w", "--word-regexp", action="store_true", help="only whole words")
    pg.add_argument("-g", "--glob", default=None, help="only paths matching this gitignore-style glob")
    pg.add_argument(
        "-t", "--type", action="append", metavar="TYPE", help="only this language (py, rust, ...; repeatable)"
    )
    pg.add_argument("-A", "--after-context", type=int, default=None, metavar="N", help="N lines after each match")
    pg.add_argument("-B", "--before-context", type=int, default=None, metavar="N", help="N lines before each match")
    pg.add_argument("-C", "--context", type=int, default=None, metavar="N", help="N lines before and after")
    pg.add_argument("-l", "--files-with-matches", action="store_true", help="only the paths of files that match")
    pg.add_argument("-c", "--count", action="store_true", help="matching lines per file")
    pg.add_argument("-m", "--max-count", type=int, default=None, metavar="N", help="at most N matching lines per file")
    pg.add_argument("--json", action="store_true", help="machine-readable output")
    pg.add_argument("--vimgrep", action="store_true", help="one path:line:col:text line per match")
    pg.add_argument("--all", action="store_true", help="every repository saved in the config (repos = [...]) too")
    pg.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    store_options(pg)
    pg.add_argument(
        "--repo",
        default=None,
        metavar="GLOB",
        help="with a fleet store: only its repositories whose names match this glob",
    )


@functools.cache
def parser() -> argparse.ArgumentParser:
    """The CLI's parser, built once per process (10 ms: the service parses every call with it)."""
    return build_parser()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
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
    search_options(ps)

    pr = sub.add_parser(
        "related",
        help="find the code most like a location or a symbol (more like this)",
        description="Code most like the chunk at PATH:LINE (or a file's first chunk, or a"
        " symbol's definition): BM25 over its names and the nearest vectors to its own, under"
        " the same ranking as search. The chunk itself is left out.",
    )
    pr.add_argument("target", help="PATH:LINE, a file, or a symbol (e.g. src/cache.py:42, RetryPolicy)")
    search_options(pr)

    grep_options(
        sub.add_parser(
            "grep",
            help="exact and regex search from the index (ripgrep's flags)",
            description="Every line that matches PATTERN (RE2's syntax, which is ripgrep's) in the"
            " indexed files, read as they are on disk now: the index's trigrams narrow which files"
            " are read. Case-sensitive unless -i or -S. Exit 0 when a line matched, 1 when none did.",
        )
    )

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
    store_options(pm)

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
        store_options(q, required=True)
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


def search_options(p: argparse.ArgumentParser) -> None:
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
    store_options(p)
    p.add_argument(
        "--repo",
        default=None,
        metavar="GLOB",
        help="with a fleet store: only its repositories whose names match this glob",
    )


def store_options(p: argparse.ArgumentParser, required: bool = False) -> None:
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


def tui_parser() -> argparse.ArgumentParser:
    p = Parser(prog="codesight", description="Open the codesight terminal UI.")
    p.add_argument(
        "path", nargs="*", default=None, help=ROOT_HELP + "; several paths are searched together as one ranked list"
    )
    p.add_argument("--yes", "-y", action="store_true", help=YES_HELP)
    store_options(p)
    return p
