"""Where a call looks: the root rule every command shares (the git repository around a path), the
repositories a search covers, a path typed after the query, the fleet store, and the workspace
the engines come from."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.cli.context import confirm, current, err
from codesight_tui.cli.parser import COMMANDS
from codesight_tui.core.errors import UsageError

if TYPE_CHECKING:
    from codesight_tui.core.apps.workspace import Workspace
    from codesight_tui.core.fleet import Fleet

LARGE_TREE_FILES = 20_000  # outside a repository, more files than this (or the home directory) ask first


def count_files(root: Path, cap: int) -> int:
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
    n = count_files(root, LARGE_TREE_FILES)
    if not home and n <= LARGE_TREE_FILES:
        return root
    what = "your home directory" if home else f"over {LARGE_TREE_FILES:,} files"
    confirm(
        f"codesight: {root} is not a git repository and holds {what}. Index all of it?",
        no_terminal=f"{root} is not a git repository and holds {what}: run codesight in a repository,"
        " name a smaller directory, or pass --yes to index it anyway",
        declined="nothing indexed: run codesight in a repository, or name a smaller directory",
    )
    return root


def saved_repos() -> list[str]:
    """The config's saved repositories (``--all``), or a usage error saying how to save some."""
    from codesight_tui.core.config import load_settings

    saved = load_settings().repos
    if not saved:
        raise UsageError('no saved repositories: list them as repos = ["~/src/a", "~/src/b"] in the config file')
    return [str(r) for r in saved]


def search_roots(args: argparse.Namespace) -> list[Path]:
    paths = list(args.path or [])
    if args.all:
        paths += saved_repos()
    from codesight_tui.core.ingest.paths import outermost

    cwd = getattr(args, "cwd", None)  # a served call's own directory (the service's is /)
    return outermost([resolve_root(p, yes=args.yes, cwd=cwd) for p in paths or ["."]])


def trailing_path(args: argparse.Namespace) -> None:
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
        err(f"{words[-1]} is a path here: searching {args.glob} for {args.query!r} (as rg does)")


def in_repository(args: argparse.Namespace) -> bool:
    from codesight_tui.core.ingest.paths import find_repo_root

    start = Path(getattr(args, "cwd", None) or ".").resolve()
    return (find_repo_root(start) / ".git").exists()


def workspace(exclude: list[str] | None = None) -> Workspace:
    """Where every command's engines come from: the warm service's workspace, or this process's
    own (its entry point is guarded, so index runs may spawn worker processes); ``exclude``:
    patterns its engines skip besides the ignore files (``index --exclude``)."""
    from codesight_tui.core.apps.workspace import EngineOptions, Workspace

    served = current().workspace
    if served is not None and not exclude:
        return served
    return Workspace(EngineOptions(lexical_processes=True, exclude=tuple(exclude or ())))


def fleet_of(args: argparse.Namespace, workspace: Workspace | None = None) -> Fleet | None:
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


def check_language(lang: str) -> str:
    """The language ``--lang`` names (any case, or an alias such as ``py``); an unknown one is a
    usage error that lists the languages codesight knows."""
    from codesight_tui.core.languages import normalize_language

    return normalize_language(lang)


def not_a_typo(word: str, cwd: str | None) -> None:
    """``codesight serach x``: a first word that is no directory but close to a command is said to
    be a mistyped command, with the nearest one, as git does (exit 2)."""
    import difflib

    if os.sep in word or Path(cwd or os.getcwd(), word).expanduser().exists():
        return
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if near:
        raise UsageError(f"'{word}' is not a command or a directory; the most similar command is `{near[0]}`")
