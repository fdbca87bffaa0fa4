"""``codesight search`` and ``related``: make sure each repository has an index, build one
``SearchRequest``, say in one line each what the answer lacks, and hand the hits to the printer."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.cli.context import EXIT_ERROR, EXIT_OK, current, err
from codesight_tui.cli.parser import MAX_LIMIT
from codesight_tui.cli.printer import print_hits
from codesight_tui.cli.progress import ready
from codesight_tui.cli.roots import (
    check_language,
    fleet_of,
    in_repository,
    search_roots,
    trailing_path,
    workspace,
)
from codesight_tui.core.errors import UsageError
from codesight_tui.core.search.contract import Lack

if TYPE_CHECKING:
    from codesight_tui.core.apps.workspace import Workspace
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.search.contract import SearchResponse


def cmd_search(args: argparse.Namespace) -> int:
    if isinstance(args.query, list):  # unquoted words, as an editor's :grep passes them
        args.query = " ".join(args.query)
    if not args.query.strip():
        raise UsageError('the query is empty: say what to look for, e.g. codesight search "parse config file"')
    trailing_path(args)
    return find(args, args.query)


def cmd_related(args: argparse.Namespace) -> int:
    if not args.target.strip():
        raise UsageError("say where: codesight related PATH:LINE, a file, or a symbol")
    from codesight_tui.core.search.related import from_cwd

    target = from_cwd(args.target, args.cwd or os.getcwd())  # a path as the user sees it, from where they are
    return find(args, target, like=True)


def output_format(args: argparse.Namespace) -> str:
    """``json``, ``vimgrep`` or ``text``: the printer's format, one of them."""
    if args.json and args.vimgrep:
        raise UsageError("--json and --vimgrep are two formats: give one")
    return "json" if args.json else "vimgrep" if args.vimgrep else "text"


def _where(args: argparse.Namespace, space: Workspace) -> tuple[list[Path], Fleet | None]:
    """The repositories a search covers, and the fleet store beside them."""
    fleet = fleet_of(args, space)
    if args.repo and fleet is None:
        raise UsageError("--repo narrows a fleet store's repositories: give --store too (or set fleet_store)")
    if fleet is not None and not args.path and not args.all and not in_repository(args):
        return [], fleet  # outside any repository: the fleet alone
    return search_roots(args), fleet


def _full_wanted(args: argparse.Namespace, engines: list[CodeSight], mode: str, fleet: Fleet | None) -> bool:
    """``--full``, unless no repository has a vector of the full model to search: loading it then
    took 21 s to answer what BM25 and the static tier answer."""
    if not (args.full and engines and mode == "hybrid" and fleet is None):
        return bool(args.full)
    if any(cs.counts()["vectors"] for cs in engines) or not all(cs.static_ready() for cs in engines):
        return True
    pending = sum(cs.counts()["pending"] for cs in engines)
    err(
        f"--full: no chunk has the full model's vectors yet, so BM25 and the static tier answer;"
        f" `codesight index --full` computes them ({engines[0].full_estimate(pending)} here)"
    )
    return False


def say_what_it_lacks(args: argparse.Namespace, results: SearchResponse) -> None:
    """The answer's notices, then what it lacks (``SearchResponse.gaps``), one line each on stderr.
    That a fast answer left the full model's vectors unused is said on a terminal (or with
    --verbose), with the flag that uses them."""
    for n in results.notices:
        err(n)
    machine = args.json or args.vimgrep
    for gap in results.gaps:
        if gap.lack is Lack.FULL_UNUSED:
            if results and not machine and (args.verbose or current().err_tty):
                err(f"{gap.text}: --full uses them")
        else:
            err(gap.text)


def find(args: argparse.Namespace, query: str, like: bool = False) -> int:
    """``search`` and ``related``: index what has no index, run, print the hits as text, JSON or
    vimgrep lines; exit 1 when there are none."""
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.modes import Vectors, checked_mode
    from codesight_tui.core.search.contract import Filters, SearchRequest

    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit takes 1 to {MAX_LIMIT:,} results")
    fmt = output_format(args)
    space = workspace()
    roots, fleet = _where(args, space)
    engines = [space.engine(root) for root in roots]
    if args.lang:
        args.lang = check_language(args.lang)
    settings = engines[0].settings if engines else fleet.settings if fleet is not None else None
    assert settings is not None
    mode = checked_mode(args.mode or settings.default_mode)
    for cs in engines:
        ready(cs, mode, args.full)
    request = SearchRequest(
        "" if like else query,
        mode,
        Vectors.LOAD if _full_wanted(args, engines, mode, fleet) else Vectors.STATIC,
        Filters(args.glob, args.lang, args.repo),
        args.limit,
        like=query if like else None,
    )
    results = space.search(request, roots, fleet)
    say_what_it_lacks(args, results)
    terms = CodeSight.query_terms(query) if query and fmt == "vimgrep" else []
    print_hits(results, fmt, several=len(engines) > 1 or fleet is not None, terms=terms, cwd=getattr(args, "cwd", None))
    if not results and fmt != "json":
        err("no results")
    return EXIT_OK if results else EXIT_ERROR
