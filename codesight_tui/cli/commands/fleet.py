"""``codesight fleet index``, ``status`` and ``remove``: many repositories in one store (local or
on object storage), indexed by Ray workers or in this process."""

from __future__ import annotations

import argparse
import json
import time

from codesight_tui.cli.context import EXIT_ERROR, EXIT_OK, err, safe, say
from codesight_tui.cli.roots import fleet_of
from codesight_tui.core.errors import UsageError


def cmd_fleet(args: argparse.Namespace) -> int:
    if not getattr(args, "fleet_command", None):
        raise UsageError("say what to do: codesight fleet index, status or remove (codesight fleet --help)")
    fleet = fleet_of(args)
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
            progress=None if args.json else (lambda m: err(safe(m))),
        )
        if args.json:
            say(json.dumps(report.to_dict(), indent=2))
        else:
            say(
                f"{len(report.indexed)} indexed, {len(report.unchanged)} unchanged, {len(report.failed)} failed"
                f" of {report.repos} repositories; {report.changed_files:,} files read, {report.chunks:,} chunks"
                f" ({report.embedded:,} embedded, {report.cache_hits:,} from cache), {report.stale_files:,} stale"
                f" files replaced; {report.rows:,} rows in {fleet.spec.uri}; {report.seconds:.1f} s on"
                f" {report.workers} worker{'s' if report.workers != 1 else ''}"
            )
        for name, why in report.failed:
            err(safe(f"{name}: {why}"))
        return EXIT_ERROR if report.failed else EXIT_OK
    if args.fleet_command == "remove":
        gone = fleet.remove(args.names)
        missing = sorted(set(args.names) - set(gone))
        if args.json:
            say(json.dumps({"removed": gone, "not_found": missing}))
        else:
            for name in gone:
                say(f"removed {name}")
        for name in missing:
            err(safe(f"{name}: not in {fleet.spec.uri}"))
        return EXIT_ERROR if missing else EXIT_OK
    repos = fleet.repos()
    if args.json:
        say(
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
    say(
        f"{fleet.spec.uri}: {len(repos)} repositories, {sum(r.chunks for r in repos):,} chunks,"
        f" {meta.get('kind')} vectors of {meta.get('model')}" + (f", {size / 1e6:,.1f} MB" if size else "")
    )
    for r in repos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.indexed_at)) if r.indexed_at else "never"
        line = f"  {r.name}  {r.commit[:10] or '-'}  {r.files:,} files  {r.chunks:,} chunks  {when}"
        say(safe(line + (f"  failed: {r.error}" if r.error else "")))
    return EXIT_OK
