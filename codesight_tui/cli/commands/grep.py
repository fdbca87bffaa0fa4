"""``codesight grep``: exact and regex search from the index, with ripgrep's habits: each matching
line as ``path:line:col:text`` (the matches coloured on a terminal), ``-l``, ``-c``, ``--json``,
``--vimgrep``; exit 0 when a line matched, 1 when none did, 2 on an error. The index narrows the
files; each is read as it is on disk now (``core.search.grep``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from codesight_tui.cli.context import EXIT_ERROR, EXIT_OK, current, err
from codesight_tui.cli.printer import print_matches
from codesight_tui.cli.progress import ready
from codesight_tui.cli.roots import fleet_of, in_repository, resolve_root, saved_repos, workspace
from codesight_tui.core.errors import UsageError

MAX_LINES = 1_000_000  # matching lines in one answer: past this it is a dump, said as cut


def grep_format(args: argparse.Namespace) -> str:
    """The printer's format: ``json``, ``vimgrep``, ``files`` (-l), ``count`` (-c) or ``text``."""
    given = [
        name
        for name, on in (
            ("json", args.json),
            ("vimgrep", args.vimgrep),
            ("files", args.files_with_matches),
            ("count", args.count),
        )
        if on
    ]
    if len(given) > 1:
        raise UsageError(f"{' and '.join('--' + g for g in given)} are several formats: give one")
    return given[0] if given else "text"


def where(args: argparse.Namespace) -> tuple[list[Path], str | None]:
    """The repositories the paths name (``.`` by default), and the part of one a path inside it
    names, as a glob (``src/``, ``src/app.py``)."""
    cwd = Path(args.cwd or os.getcwd())
    roots: list[Path] = []
    inside: list[str] = []
    for given in [*args.paths, *(saved_repos() if args.all else [])] or ["."]:
        place = (cwd / Path(given).expanduser()).resolve()
        if not place.exists():
            raise UsageError(f"no such file or directory: {given}")
        root = resolve_root(place if place.is_dir() else place.parent, yes=args.yes, cwd=str(cwd))
        if root not in roots:
            roots.append(root)
        if place != root:
            rel = place.relative_to(root).as_posix()
            inside.append(f"/{rel}/" if place.is_dir() else f"/{rel}")
    if inside and (len(inside) > 1 or len(roots) > 1):
        raise UsageError("a folder or file inside a repository narrows one repository: give one, or use -g")
    return roots, inside[0] if inside else None


def cmd_grep(args: argparse.Namespace) -> int:
    from codesight_tui.core.search.contract import Case, Filters, GrepOptions, SearchRequest

    fmt = grep_format(args)
    for flag, value in (
        ("-m", args.max_count),
        ("-A", args.after_context),
        ("-B", args.before_context),
        ("-C", args.context),
    ):
        if value is not None and value < (1 if flag == "-m" else 0):
            raise UsageError(f"{flag} takes a number of lines ({'1' if flag == '-m' else '0'} or more)")
    space = workspace()
    fleet = fleet_of(args, space)
    if args.repo and fleet is None:
        raise UsageError("--repo narrows a fleet store's repositories: give --store too (or set fleet_store)")
    alone = fleet is not None and not args.paths and not args.all and not in_repository(args)
    roots, inside = ([], None) if alone else where(args)  # outside any repository: the fleet alone, as search
    if args.glob and inside:
        raise UsageError("-g and a path inside the repository both narrow it: give one")
    for root in roots:
        cs = space.engine(root)
        if not cs.is_indexed():
            ready(cs, "bm25", False)
    case: Case = "insensitive" if args.ignore_case else "smart" if args.smart_case else "sensitive"
    around = args.context or 0
    options = GrepOptions(
        fixed=args.fixed_strings,
        case=case,
        word=args.word_regexp,
        types=tuple(args.type or ()),
        before=args.before_context if args.before_context is not None else around,
        after=args.after_context if args.after_context is not None else around,
        max_per_file=1 if fmt == "files" else args.max_count,  # -l: a file's first line says it
        scopes=fmt == "json",  # the plain formats print no definition
        every_span=fmt in ("json", "vimgrep") or (fmt == "text" and current().color),  # else the first is shown
    )
    filters = Filters(args.glob or inside, repo=args.repo)
    request = SearchRequest(args.pattern, filters=filters, limit=MAX_LINES, grep=options)
    answer = space.search(request, roots, fleet)
    for notice in answer.notices:
        err(notice)
    for gap in answer.gaps:
        err(gap.text)
    context = bool(options.before or options.after)
    print_matches(answer.hits, fmt, cwd=args.cwd, context=context, several=len(roots) > 1 or fleet is not None)
    if len(answer) >= MAX_LINES:
        err(f"the first {MAX_LINES:,} matching lines: narrow it with a path or -g")
    return EXIT_OK if answer else EXIT_ERROR
