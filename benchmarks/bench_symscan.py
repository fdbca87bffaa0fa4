"""Issue 51: the symbols' walk in C (core/ingest/native/symscan.c) against the Python walk, file by file.

    python benchmarks/bench_symscan.py [--corpus DIR] [--files N]

Each code file of the corpus (default: the 10,000-file tree; ``.cache/polyglot/repos`` for the
polyglot sources) is parsed once, and its rows made by both walks: ``_native_rows`` (the C walk;
None where the Python walk answers: Lua, shell, a parse ``_recover`` redoes) and ``python_rows``.
Prints per language how many files each walk gave, how many differ in bytes, how many differ as
the index reads them (each name's uses, calls and imports by name), and the CPU of each walk.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def by_name(rows: Any) -> Any:
    """Rows as the index reads them: the order of two names that start at one place says nothing."""
    defs, names, ends, uses, calls, imports, _cut = rows
    listed = names.split("\n") if names else []
    flat, prev, out = array("i", uses), 0, {}
    for name, end in zip(listed, array("i", ends), strict=True):
        out[name] = tuple(flat[prev:end])
        prev = end
    c = array("i", calls)
    return (
        defs,
        out,
        sorted((listed[c[k]], c[k + 1], c[k + 2]) for k in range(0, len(c), 3)),
        sorted(listed[k] for k in array("i", imports)),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT / "benchmarks" / ".data" / "scale" / "corpus")
    ap.add_argument("--files", type=int, default=0, help="walked files to take, seeded (0: all)")
    args = ap.parse_args()
    from codesight_tui.core.ingest import symbols
    from codesight_tui.core.ingest.chunker import parser_for
    from codesight_tui.core.ingest.grammars import GRAMMARS
    from codesight_tui.core.ingest.walker import walk
    from codesight_tui.core.languages import detect_language

    if symbols.native_version() is None:
        sys.exit("the C walk is not built here (pip install -e . with a C compiler)")
    entries = list(walk(args.corpus, max_file_size=1_000_000, exclude=[]))
    random.Random(1).shuffle(entries)
    files, native, raw, differ = Counter(), Counter(), Counter(), Counter()
    t_native = t_python = 0.0
    for e in entries[: args.files or None]:
        data = Path(e.abs_path).read_bytes()
        lang = detect_language(e.rel_path, data[:512])
        if lang not in GRAMMARS:
            continue
        text = data.decode("utf-8", errors="surrogateescape")
        tree = parser_for(lang).parse(text.encode("utf-8", errors="surrogateescape"))
        t = time.process_time()
        fast = symbols._native_rows(lang, text, tree)
        t_native += time.process_time() - t
        t = time.process_time()
        slow = symbols.python_rows(lang, text, tree)
        t_python += time.process_time() - t
        files[lang] += 1
        if fast is None:
            continue
        native[lang] += 1
        if fast != slow:
            raw[lang] += 1
            if by_name(fast) != by_name(slow):
                differ[lang] += 1
                print(f"differs: {lang} {e.rel_path}", flush=True)
    print("| language | code files | by the C walk | differ in bytes | differ as read |")
    print("| --- | --- | --- | --- | --- |")
    for lang in sorted(files):
        print(f"| {lang} | {files[lang]:,} | {native[lang]:,} | {raw[lang]:,} | {differ[lang]:,} |")
    print(
        f"| all | {sum(files.values()):,} | {sum(native.values()):,} | {sum(raw.values()):,} | "
        f"{sum(differ.values()):,} |"
    )
    print(f"CPU: the C walk {t_native:.2f} s (with the files it hands back), the Python walk {t_python:.2f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
