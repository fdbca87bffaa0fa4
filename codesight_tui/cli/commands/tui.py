"""``codesight [PATH ...]``: the terminal UI, on a terminal only; a script is told what to use."""

from __future__ import annotations

import argparse
import sys

from codesight_tui.cli.roots import fleet_of, not_a_typo, resolve_root
from codesight_tui.core.errors import CodeSightError, UsageError


def cmd_tui(args: argparse.Namespace) -> int:
    paths = args.path or ["."]
    not_a_typo(paths[0], args.cwd)
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
    return run_app(roots[0], roots[1:], fleet=fleet_of(args))
