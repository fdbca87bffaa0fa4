"""``codesight status`` (one repository's index: its size, freshness, tiers and what it left out),
``cache`` (the shared embedding cache: sizes, pruning) and ``stats`` (what searches served to
agents saved)."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.cli.context import EXIT_OK, err, safe, say
from codesight_tui.cli.printer import ago, human_size, short
from codesight_tui.cli.roots import resolve_root, workspace
from codesight_tui.core.errors import CodeSightError, UsageError

if TYPE_CHECKING:
    from codesight_tui.core.search.status import IndexStatus


def _rows(st: IndexStatus) -> list[tuple[str, str]]:
    """``status``'s lines for an indexed repository: a name and what it says."""
    changed = st.get("changed_files")
    detail = (
        ", ".join(f"{len(changed[k])} {k}" for k in ("added", "modified", "deleted") if changed and changed[k])
        if changed
        else ""
    )
    rows = [
        ("root", st["root"]),
        ("index", f"{st['index_dir']} ({human_size(st['index_bytes'])})"),
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
            f"{cache['entries']:,} vectors, {human_size(cache['bytes'])} (shared; `codesight cache`)"
            if (cache := st.get("cache"))
            else "none yet",
        ),
        (
            "indexed",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st["last_indexed"])) + f" ({ago(st['last_indexed'])})"
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
            ("docs", f"{docs.get('indexed', 0):,} indexed" + (f"; skipped {safe(listed)}{more}" if bad else ""))
        )
    return rows


def cmd_status(args: argparse.Namespace) -> int:
    cs = workspace().engine(resolve_root(args.path, indexing=False))
    st = cs.status()
    for n in st.get("notices", []):  # a rebuilt or read-only index is said, never silent
        err(n)
    if args.json:
        say(json.dumps(st, indent=2))
        return EXIT_OK
    if not st["indexed"]:
        say(f"{st['root']}: not indexed yet (run `codesight index {args.path}`)")
        return EXIT_OK
    rows = _rows(st)
    for k, v in rows:
        say(f"{k:<9}{v}")
    return EXIT_OK


def parse_size(text: str) -> int:

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
            max_bytes = parse_size(args.max_size)
        if args.older_than is not None and args.older_than < 0:
            raise UsageError("--older-than must be at least 0 days")
        older = args.older_than * 86400 if args.older_than is not None else None
        try:
            out = [EmbeddingCache.open_file(f).prune(max_bytes=max_bytes, older_than_s=older) for f in files]
        except sqlite3.Error as exc:  # read-only, locked by an indexer, or damaged
            raise CodeSightError(f"cannot prune the embedding cache in {settings.cache_dir}: {exc}") from None
        if args.json:
            say(json.dumps(out, indent=2))
        for r in [] if args.json else out:
            say(
                f"{Path(r['path']).name}: removed {r['removed']:,} vectors, {r['entries']:,} left;"
                f" {human_size(r['bytes_before'])} -> {human_size(r['bytes_after'])}"
            )
        if not files and not args.json:
            say(f"no embedding cache in {settings.cache_dir}")
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
        say(
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
    say(
        f"{settings.cache_dir}: {human_size(total)} in all (embedding caches capped at"
        f" {settings.cache_max_mb:,} MB per model)"
    )
    for st in stats:
        say(f"  {Path(st['path']).name}: {st['entries']:,} vectors, {human_size(st['bytes'])}")
    for name, size in other.items():
        say(f"  {name}: {human_size(size)}")
    if not stats and not other:
        say("  empty")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    from codesight_tui.core.engine import CodeSight

    rows = CodeSight.usage_stats()
    if args.json:
        say(json.dumps([r.to_dict() for r in rows], indent=2))
        return EXIT_OK
    if not rows:
        say("no searches served to agents yet (codesight mcp counts them)")
        return EXIT_OK
    say(
        f"{'repository':<40} {'searches':>8} {'hits':>6} {'tokens returned':>15} {'tokens of the files':>19} {'saved':>6}"
    )
    for r in rows:
        say(
            f"{safe(short(r.repo, 40)):<40} {r.searches:>8,} {r.results:>6,} {r.tokens:>15,} {r.file_tokens:>19,}"
            f" {r.saved:>6.0%}"
        )
    return EXIT_OK
