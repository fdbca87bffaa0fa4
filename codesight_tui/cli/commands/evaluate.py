"""``codesight eval``: retrieval quality (NDCG@10, MRR@10, recall) of query files or of a whole
collection, per mode, category and language, with the published peers beside it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.cli.context import EXIT_OK, say
from codesight_tui.cli.printer import print_eval_report
from codesight_tui.cli.progress import ProgressView, progress_wanted
from codesight_tui.core.errors import UsageError
from codesight_tui.core.modes import ANSWERS

if TYPE_CHECKING:
    from codesight_tui.core.apps.evaluation import Suite


def eval_suites(args: argparse.Namespace) -> tuple[list[Suite] | list[tuple[Path, Path]], dict[str, Any]]:
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


def coverage_of(text: str | None) -> list[float] | None:

    if text is None:
        return None
    try:
        pcts = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        pcts = []
    if not pcts or any(not 0 <= x <= 100 for x in pcts):
        raise UsageError("--coverage takes percentages from 0 to 100, e.g. 0,10,50,100")
    return [x / 100 for x in pcts]


def cmd_eval(args: argparse.Namespace) -> int:
    from codesight_tui.core.apps.evaluation import evaluate

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    suites, published = eval_suites(args)
    coverage = coverage_of(args.coverage)
    modes = list(ANSWERS) if args.mode == "all" else [args.mode]
    if coverage is not None and args.mode == "all":
        modes = ["hybrid"]
    progress = ProgressView(progress_wanted(not args.json))
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
        say(json.dumps(report, indent=2))
        return EXIT_OK
    print_eval_report(report)
    return EXIT_OK
