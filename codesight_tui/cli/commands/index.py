"""``codesight index`` and ``watch``: an index run with its progress and report, and a watcher
that re-indexes what changes, a line (or a JSON object) per batch."""

from __future__ import annotations

import argparse
import json
import threading
from typing import TYPE_CHECKING

from codesight_tui.cli.context import EXIT_OK, Terminated, current, err, exit_code, say, using
from codesight_tui.cli.printer import batch_line, summary
from codesight_tui.cli.progress import run_index
from codesight_tui.cli.roots import resolve_root, workspace
from codesight_tui.core.errors import UsageError

if TYPE_CHECKING:
    from codesight_tui.core.index.indexer import IndexReport
    from codesight_tui.core.store.watch import Batch


def cmd_index(args: argparse.Namespace) -> int:
    # Our main module is guarded, so an index run's worker processes can spawn (lexical_processes).
    cs = workspace(args.exclude).engine(resolve_root(args.path, yes=args.yes))
    if args.full and (args.no_embed or args.static_only):
        raise UsageError(
            "--full computes the full model's vectors, --no-embed and --static-only leave them out: give one"
        )
    wanted = not (args.no_embed or args.static_only)
    embed = args.full or (wanted and cs.full_pass())
    report = run_index(cs, embed=embed, force=args.force, wait=args.wait, static=args.static_only or not args.no_embed)
    if wanted and not embed and report.vectors_pending:
        why = "on a CPU (full_model = auto)" if cs.settings.full_model == "auto" else "(full_model = off)"
        cached = f" ({report.cache_hits:,} from the shared cache are used)" if report.cache_hits else ""
        err(
            f"the full model's vectors are left out {why}{cached}: BM25 and the static tier answer;"
            f" `codesight index --full` computes the other {report.vectors_pending:,}"
            f" ({cs.full_estimate(report.vectors_pending)} here)"
        )
    for w in report.warnings:
        err(w)
    if args.json:
        say(json.dumps(report.to_dict(), indent=2))
    else:
        say(summary(report))
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    cs = workspace().engine(resolve_root(args.path, yes=args.yes))
    ctx = current()

    def on_batch(batch: Batch, report: IndexReport) -> None:  # in the watcher's thread: the call's streams
        with using(ctx):
            said(batch, report)

    def said(batch: Batch, report: IndexReport) -> None:
        line = batch_line(batch, report)
        if args.json:
            say(json.dumps(line), flush=True)
            return
        what = "caught up" if batch.full else ", ".join(f"{n} {k}" for k, n in sorted(line["changes"].items()))
        vec = f"; {report.embedded} embedded" + (
            f", {report.vectors_pending:,} pending" if report.vectors_pending else ""
        )
        say(
            f"{line['time']}  {what}: {report.files_changed} files re-indexed, +{report.chunks_added}"
            f" -{report.chunks_removed} chunks{vec if not args.no_embed else ''} ({report.seconds:.2f}s)",
            flush=True,
        )
        for w in report.warnings:
            err(w)

    # The full model's vectors as `index` has them (CodeSight.full_pass); the static tier's always.
    watcher = cs.watch(on_batch, embed=not args.no_embed and cs.full_pass(), static=not args.no_embed)
    err(f"watching {cs.root} ({'file events' if watcher.mode == 'events' else 'polling'}); Ctrl-C stops")
    done = threading.Event()
    try:
        while not done.wait(0.5):
            for e in watcher.errors:
                err(e)
            watcher.errors.clear()
    except KeyboardInterrupt as exc:
        watcher.stop(timeout=2)
        err("stopped watching: everything indexed so far is saved")
        return exit_code(exc) if isinstance(exc, Terminated) else EXIT_OK
    return EXIT_OK
