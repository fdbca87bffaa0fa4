"""``codesight def``, ``refs``, ``callers`` and ``callees``: index what has no index, follow the
name or place, hand the answer to the printer, and say in one line why it is empty."""

from __future__ import annotations

import argparse
import os

from codesight_tui.cli.commands.search import output_format
from codesight_tui.cli.context import EXIT_ERROR, EXIT_OK, err
from codesight_tui.cli.parser import MAX_LIMIT
from codesight_tui.cli.printer import print_navigation
from codesight_tui.cli.progress import ready
from codesight_tui.cli.roots import check_language, resolve_root, workspace
from codesight_tui.core.errors import UsageError


def cmd_follow(args: argparse.Namespace) -> int:
    """``def``, ``refs``, ``callers`` and ``callees``: print as text grouped by file, JSON or
    vimgrep lines; exit 1 when nothing is found."""
    from codesight_tui.core.search.related import from_cwd

    if not args.target.strip():
        raise UsageError(f"say what to follow: codesight {args.command} NAME, or PATH:LINE")
    if not 1 <= args.limit <= MAX_LIMIT * 10:
        raise UsageError(f"--limit takes 1 to {MAX_LIMIT * 10:,} places")
    fmt = output_format(args)
    cwd = args.cwd or os.getcwd()
    root = resolve_root(args.path, yes=args.yes, cwd=args.cwd)
    space = workspace()
    cs = space.engine(root)
    ready(cs, cs.settings.default_mode, False)
    language = check_language(args.lang) if args.lang else None
    nav = space.follow(root, args.action, from_cwd(args.target, cwd), args.limit, glob=args.glob, language=language)
    print_navigation(nav, args.action, fmt, root, cwd)
    if fmt == "text":  # json and vimgrep lines are all a script reads: nothing more to say
        if nav.truncated:
            err(f"more than {args.limit:,} places: the first {args.limit:,} are listed (--limit)")
        if not nav and (args.glob or args.lang):
            err(f"no {args.action} of {nav.name} in the paths that -g/-l keep")
        elif not nav:
            err(
                f"no {args.action} of {nav.name} in the index"
                if nav.candidates or args.action != "definitions"
                else f"{nav.name} is not defined in the index"
            )
    return EXIT_OK if nav else EXIT_ERROR
