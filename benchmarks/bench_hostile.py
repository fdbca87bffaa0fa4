"""Issue 66 items 6-9: hostile source files against the symbols' bounds, in every installed grammar.

    python benchmarks/bench_hostile.py [--languages python,lua] [--shapes deep,chain] [--index]

Five shapes, each written in every grammar's own syntax (``SHAPES``, ``WRAP``):

- ``deep``: 50,000 nested calls, ``f(f(f(...1...)))`` (150 KB);
- ``deep-broken``: the same with one syntax error after it;
- ``nested``: 20,000 definitions nested one a line (classes, functions, modules: what the language
  nests), or as many as fit in a 1 MB file where each level indents;
- ``broken``: ``int f( { #define X(`` repeated to about 205 KB (a parse lost line by line);
- ``chain``: ``x = v0+v1+...+v69999`` (480 KB).

For each file it prints the time of the symbols' rows from the C walk (``extract_rows``; "-" where
the Python walk answers for that file anyway) and from the Python walk (``python_rows``), and the
bytes of those rows. With ``--index`` it also indexes each file alone in a fresh repository, with
the C walk and then with the Python walk (``symscan`` unloaded in this process), and prints the
lexical phase's time and how much the file grows ``index.db`` beyond an empty repository's, as a
multiple of the file's size. The targets: no file over 2 s, none over 10x its size. Every file
runs under a 120 s alarm, so a regression is a line that says so rather than a hang.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

N_DEEP = 50_000
N_NESTED = 20_000
N_CHAIN = 70_000
BROKEN = "int f( { #define X( \n"

# A statement that holds an expression, per grammar ("{e}" is the expression).
WRAP = {
    "python": "x = {e}\n",
    "ruby": "x = {e}\n",
    "lua": "local x = {e}\n",
    "elixir": "x = {e}\n",
    "haskell": "x = {e}\n",
    "javascript": "var x = {e};\n",
    "typescript": "var x = {e};\n",
    "tsx": "var x = {e};\n",
    "go": "package p\n\nvar x = {e}\n",
    "rust": "fn main() {{ let x = {e}; }}\n",
    "java": "class A {{ int x = {e}; }}\n",
    "csharp": "class A {{ int x = {e}; }}\n",
    "c": "int x = {e};\n",
    "cpp": "int x = {e};\n",
    "kotlin": "val x = {e}\n",
    "scala": "object A {{ val x = {e} }}\n",
    "swift": "let x = {e}\n",
    "php": "<?php $x = {e};\n",
    "zig": "const x = {e};\n",
    "shell": "echo $(( {e} ))\n",
}
# One nested definition's opening and closing line, per grammar ("{i}": its number; "{pad}": the
# indentation where the language needs it).
NEST = {
    "python": ("{pad}class C{i}:\n", ""),
    "ruby": ("def f{i}\n", "end\n"),
    "lua": ("function f{i}()\n", "end\n"),
    "elixir": ("defmodule M{i} do\n", "end\n"),
    "haskell": ("{pad}f{i} = g where\n", ""),
    "javascript": ("function f{i}() {{\n", "}}\n"),
    "typescript": ("function f{i}() {{\n", "}}\n"),
    "tsx": ("function f{i}() {{\n", "}}\n"),
    "go": ("func() {{\n", "}}()\n"),
    "rust": ("fn f{i}() {{\n", "}}\n"),
    "java": ("class C{i} {{\n", "}}\n"),
    "csharp": ("class C{i} {{\n", "}}\n"),
    "c": ("struct s{i} {{\n", "}};\n"),
    "cpp": ("namespace n{i} {{\n", "}}\n"),
    "kotlin": ("class C{i} {{\n", "}}\n"),
    "scala": ("object O{i} {{\n", "}}\n"),
    "swift": ("class C{i} {{\n", "}}\n"),
    "php": ("function f{i}() {{\n", "}}\n"),
    "zig": ("const S{i} = struct {{\n", "}};\n"),
    "shell": ("f{i}() {{\n", "}}\n"),
}
INDENTED = {"python", "haskell"}


def shapes(language: str) -> dict[str, str]:
    wrap = WRAP[language]
    call = "f(" if language not in ("haskell", "shell") else "f (" if language == "haskell" else "("
    close = ")"
    deep = wrap.format(e=call * N_DEEP + "1" + close * N_DEEP)
    head, tail = NEST[language]
    if language in INDENTED:  # each level indents one more: as many levels as fit in 1 MB
        levels = 1_400
        nested = "".join(head.format(i=i, pad=" " * i) for i in range(levels)) + " " * levels + "x = 1\n"
    else:
        nested = "".join(head.format(i=i, pad="") for i in range(N_NESTED)) + "".join(
            tail.format(i=i) for i in range(N_NESTED)
        )
    if language == "go":
        nested = "package p\n\nvar x = " + nested
    chain = wrap.format(e="+".join(f"v{i}" for i in range(N_CHAIN)))
    if language == "shell":
        chain = "echo $(( " + "+".join(f"v{i}" for i in range(N_CHAIN)) + " ))\n"
    return {
        "deep": deep,
        "deep-broken": deep + "\n@@ ( { ]]\n",
        "nested": nested,
        "broken": BROKEN * (205_000 // len(BROKEN)),
        "chain": chain,
    }


class Slow(Exception):
    pass


def timed(fn: Any, *args: Any, limit: float = 120.0) -> tuple[Any, float]:
    def stop(*_: Any) -> None:
        raise Slow

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    try:
        return fn(*args), time.perf_counter() - t0
    except Slow:
        return Slow, limit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def row_bytes(rows: Any) -> int:
    if rows is None or rows is Slow:
        return 0
    return sum(len(x) for x in rows[1:6]) + sum(len(d[0]) + len(d[1]) + len(d[2]) + 12 for d in rows[0])


EXT = {
    "python": "py",
    "ruby": "rb",
    "lua": "lua",
    "elixir": "ex",
    "haskell": "hs",
    "javascript": "js",
    "typescript": "ts",
    "tsx": "tsx",
    "go": "go",
    "rust": "rs",
    "java": "java",
    "csharp": "cs",
    "c": "c",
    "cpp": "cpp",
    "kotlin": "kt",
    "scala": "scala",
    "swift": "swift",
    "php": "php",
    "zig": "zig",
    "shell": "sh",
}


def index_growth(language: str, text: str, work: Path) -> tuple[float, float]:
    """The lexical phase's seconds and index.db's growth (bytes) for ``text`` alone in a new
    repository, against a repository with one empty file of that language."""
    from codesight_tui.core.config import Settings
    from codesight_tui.core.engine import CodeSight

    sizes, seconds = [], 0.0
    for k, body in enumerate(("", text)):
        repo = work / f"{language}-{k}-{time.monotonic_ns()}"
        (repo / ".git").mkdir(parents=True)
        (repo / f"hostile.{EXT[language]}").write_text(body)
        cs = CodeSight(repo, settings=Settings(data_dir=work / "data", cache_dir=work / "cache"))
        try:
            report, seconds = timed(lambda cs=cs: cs.index(embed=False, static=False))
        finally:
            cs.close()
        if report is Slow:
            return float("inf"), float("nan")
        db = max((work / "data").rglob("index.db"), key=lambda p: p.stat().st_mtime_ns)  # this repository's
        wal = db.with_name("index.db-wal")
        sizes.append(db.stat().st_size + (wal.stat().st_size if wal.exists() else 0))
    return seconds, float(sizes[1] - sizes[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--languages", default="", help="comma-separated grammars (default: all installed)")
    ap.add_argument("--shapes", default="", help="comma-separated shapes (default: all five)")
    ap.add_argument("--index", action="store_true", help="also index each file alone, with each walk")
    args = ap.parse_args()
    from codesight_tui.core.ingest import symbols
    from codesight_tui.core.ingest.grammars import GRAMMARS

    native = symbols.native_version() is not None
    languages = [x for x in args.languages.split(",") if x] or sorted(GRAMMARS)
    wanted = [x for x in args.shapes.split(",") if x]
    print(
        f"C walk: {'built' if native else 'not built'}; bounds: DEEP {symbols.DEEP:,} levels, MAX_NAMES"
        f" {symbols.MAX_NAMES:,}, MAX_DEFS {symbols.MAX_DEFS:,}, MAX_SCOPE {symbols.MAX_SCOPE}"
    )
    head = f"{'language':<11} {'shape':<12} {'KB':>6} {'C walk s':>9} {'Python s':>9} {'rows x':>7}"
    if args.index:
        head += f" {'index C s':>9} {'growth x':>8} {'index Py s':>10} {'growth x':>8}"
    print(head + "  cut")
    worst_s = worst_x = 0.0
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for language in languages:
            for shape, text in shapes(language).items():
                if wanted and shape not in wanted:
                    continue
                size = len(text.encode())
                fast, t_fast = timed(symbols._native_rows, language, text, None) if native else (None, 0.0)
                slow, t_slow = timed(symbols.python_rows, language, text, None)
                rows = fast if fast not in (None, Slow) else slow
                ratio = row_bytes(rows) / size
                cut = rows[6] if rows not in (None, Slow) else ("TIMED OUT" if rows is Slow else "")
                line = (
                    f"{language:<11} {shape:<12} {size / 1000:>6.0f} "
                    f"{'-' if fast is None else ('>120' if fast is Slow else f'{t_fast:.2f}'):>9} "
                    f"{'>120' if slow is Slow else f'{t_slow:.2f}':>9} {ratio:>7.2f}"
                )
                worst_s = max(worst_s, t_fast if fast is not None else 0.0, t_slow)
                if args.index:
                    grown = []
                    for walk in ("C", "Python"):
                        saved = symbols.symscan
                        if walk == "Python":
                            symbols.symscan = None
                            symbols.native_tables.cache_clear()
                        try:
                            seconds, growth = index_growth(language, text, Path(tmp))
                        finally:
                            symbols.symscan = saved
                            symbols.native_tables.cache_clear()
                        grown.append((seconds, growth / size))
                        worst_s, worst_x = max(worst_s, seconds), max(worst_x, growth / size)
                    line += "".join(
                        f" {s:>9.2f} {x:>8.2f}" if walk == 0 else f" {s:>10.2f} {x:>8.2f}"
                        for walk, (s, x) in enumerate(grown)
                    )
                print(line + f"  {cut}", flush=True)
    print(f"worst: {worst_s:.2f} s a file" + (f", {worst_x:.2f}x its size in index.db" if args.index else ""))
    return 0 if worst_s <= 2.0 and worst_x <= 10.0 else 1


if __name__ == "__main__":
    sys.exit(main())
