"""core.symbols (issue 51): definitions and references from the parse, per language. Each fixture
defines ``helper``, calls it from ``caller`` (directly, and as a member where the language has
methods), and names it once in a comment and once in a string on lines of their own: those two
lines must never hold a reference, and every line below is checked exactly."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from codesight_tui.core.ingest.chunker import parser_for
from codesight_tui.core.ingest.grammars import GRAMMARS
from codesight_tui.core.ingest.symbols import FileSymbols, extract

T = TypeVar("T")

FIXTURES: dict[str, tuple[str, dict[str, int | list[int]], list[int], tuple[int, ...]]] = {
    "python": (
        """import os
from util import helper as imported


class Box:
    def helper(self, x):
        return x


def caller(box):
    # helper is named in this comment only
    text = "helper in a string"
    return helper(box) + box.helper(1)


def helper(value):
    return os.path.join(value)
""",
        {"Box": 5, "helper": [6, 16], "caller": 10},
        [13, 13],
        (11, 12),
    ),
    "javascript": (
        """import { thing } from "./thing.js";

class Box {
  helper(x) { return x; }
}

function caller(box) {
  // helper is named in this comment only
  const text = "helper in a string";
  return helper(box) + box.helper(1);
}

function helper(value) {
  return thing(value);
}
""",
        {"Box": 3, "helper": [4, 13], "caller": 7},
        [10, 10],
        (8, 9),
    ),
    "typescript": (
        """import { thing } from "./thing";

export class Box {
  helper(x: number): number { return x; }
}

export function caller(box: Box): number {
  // helper is named in this comment only
  const text: string = "helper in a string";
  return helper(box) + box.helper(1);
}

export const helper = (value: Box): number => thing(value);
""",
        {"Box": 3, "helper": [4, 13], "caller": 7},
        [10, 10],
        (8, 9),
    ),
    "go": (
        """package main

import "fmt"

type Box struct{ N int }

func (b *Box) Helper(x int) int { return x }

func caller(b *Box) int {
	// helper is named in this comment only
	text := "helper in a string"
	fmt.Println(text)
	return helper(b) + b.Helper(1)
}

func helper(b *Box) int {
	return b.N
}
""",
        {"Box": 5, "Helper": 7, "caller": 9, "helper": 16},
        [13, 13],
        (10, 11),
    ),
    "rust": (
        """use std::fmt;

struct Boxed { n: u32 }

impl Boxed {
    fn helper(&self, x: u32) -> u32 { x }
}

fn caller(b: &Boxed) -> u32 {
    // helper is named in this comment only
    let text = "helper in a string";
    helper(b) + b.helper(1)
}

fn helper(b: &Boxed) -> u32 {
    b.n
}
""",
        {"Boxed": [3, 5], "helper": [6, 15], "caller": 9},
        [12, 12],
        (10, 11),
    ),
    "java": (
        """import java.util.List;

class Box {
    int helper(int x) { return x; }

    int caller(Box box) {
        // helper is named in this comment only
        String text = "helper in a string";
        return helper(1) + box.helper(2);
    }
}
""",
        {"Box": 3, "helper": 4, "caller": 6},
        [9, 9],
        (7, 8),
    ),
    "c": (
        """#include <stdio.h>

struct box { int n; };

static int helper(struct box *b) {
    return b->n;
}

int caller(struct box *b) {
    /* helper is named in this comment only */
    const char *text = "helper in a string";
    return helper(b);
}
""",
        {"box": 3, "helper": 5, "caller": 9},
        [12],
        (10, 11),
    ),
    "cpp": (
        """#include <string>

namespace shapes {
class Box {
 public:
  int helper(int x) { return x; }
};
}

int helper(int x) { return x + 1; }

int caller(shapes::Box& box) {
  // helper is named in this comment only
  std::string text = "helper in a string";
  return helper(1) + box.helper(2);
}
""",
        {"shapes": 3, "Box": 4, "helper": [6, 10], "caller": 12},
        [15, 15],
        (13, 14),
    ),
}


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_definitions_and_references_are_on_the_right_lines(language: str) -> None:
    source, defs, call_lines, prose = FIXTURES[language]
    found = extract(language, source)
    assert found is not None
    lines: dict[str, list[int]] = {}
    for d in found.defs:
        lines.setdefault(d.name, []).append(d.line)
    for name, want in defs.items():
        assert lines.get(name) == (want if isinstance(want, list) else [want]), (name, lines)
    helper_refs = [r for r in found.refs if r.name.lower() == "helper"]
    assert not [r for r in helper_refs if r.line in prose], "a comment or a string is no reference"
    calls = [r for r in helper_refs if r.kind == "call"]
    # one reference per name, line and kind, as the index stores them: a call on a line that another
    # call of the same name shares shows as something else if it is not told as a call
    assert sorted({r.line for r in calls}) == sorted(set(call_lines))
    assert not [r for r in helper_refs if r.line in call_lines and r.kind != "call"]
    assert all(getattr(found.enclosing(r), "name", None) == "caller" for r in calls)
    # a definition's own name is not a reference to it
    assert not [r for r in helper_refs if any(d.name.lower() == "helper" and d.line == r.line for d in found.defs)]


def test_scopes_nest_and_kinds_are_told_apart() -> None:
    found = extract("python", FIXTURES["python"][0])
    assert found is not None
    method = next(d for d in found.defs if d.name == "helper" and d.scope == "Box")
    assert (method.kind, method.start_line, method.end_line) == ("def", 6, 7)
    kinds = {(r.name, r.line): r.kind for r in found.refs}
    assert kinds[("helper", 2)] == "import" and kinds[("os", 1)] == "import"
    assert kinds[("join", 17)] == "call" and kinds[("path", 17)] == "other"
    typed = extract("typescript", FIXTURES["typescript"][0])
    assert typed is not None
    assert {r.kind for r in typed.refs if r.name == "Box"} == {"type"}


def test_no_grammar_no_symbols() -> None:
    assert extract("markdown", "# helper\n") is None
    assert extract("python", "") is not None


# Definitions a reader looks up by name that no chunk is cut at (issue 51's ctags check): each
# (language, source, {name: (line, scope)}) must be found on exactly that line, in that scope.
NAMED = [
    (
        "cpp",
        """struct HashEq<std::string> : StringHashEq {};
class WithId {
  WithId& operator=(WithId&& that) { return *this; }
  explicit operator int() const { return 1; }
  const_iterator cend() const ATTRIBUTE_LIFETIME_BOUND { return end(); }
};
inline Cord& Cord::operator=(const Cord& x) { return *this; }
std::string LengthModFor<short>() { return ""; }
""",
        {
            "HashEq": (1, ""),
            "operator=": (3, "WithId"),
            "operator int": (4, "WithId"),
            "cend": (5, "WithId"),
            "Cord::operator=": (7, ""),
            "LengthModFor": (8, ""),
        },
    ),
    (
        "javascript",
        """const defaults = {
  toJSON: function toJSON() { return 1; },
  adapter: () => 2,
};
request.onabort = function handleAbort() { cleanup(); };
config.paramsSerializer = { encode: 1 };
""",
        {
            "defaults": (1, ""),
            "toJSON": (2, ""),
            "adapter": (3, ""),
            "handleAbort": (5, "request.onabort"),
            "paramsSerializer": (6, ""),
        },
    ),
    (
        "typescript",
        """interface Vi {
  soft: <T>(actual: T) => T
  count: number
}
""",
        {"Vi": (1, ""), "soft": (2, "Vi")},
    ),
    (
        "lua",
        """local M = {}
M.flatten = has_iter and function(x) return x end or function(x) return {} end
local handlers = { ["README.md"] = function() end }
local config = { size = 1, name = "x" }
""",
        {"M.flatten": (2, ""), "README.md": (3, "handlers")},
    ),
    (
        "haskell",
        """data State = State { stNotes :: [Text]
                   , stId :: Int }
""",
        {"State": (1, ""), "stNotes": (1, "State"), "stId": (2, "State")},
    ),
    (
        "kotlin",
        """class Table {
    companion object {
        fun of(name: String) = Table()
    }
}
""",
        {"Table": (1, ""), "Companion": (2, "Table"), "of": (3, "Table.Companion")},
    ),
]


@pytest.mark.parametrize(("language", "source", "want"), NAMED, ids=[n[0] for n in NAMED])
def test_names_a_reader_looks_up_are_definitions(language: str, source: str, want: dict[str, tuple[int, str]]) -> None:
    found = extract(language, source)
    assert found is not None
    got = {d.name: (d.line, d.scope) for d in found.defs}
    for name, at in want.items():
        assert got.get(name) == at, (name, got)
    assert not {"count", "ATTRIBUTE_LIFETIME_BOUND", "size", "name"} & set(got)  # a field, a macro, values


def test_an_object_is_no_callers_scope() -> None:
    """A call in an object literal is its function's, not the object's: callers are functions."""
    found = extract("javascript", "function outer() {\n  const opts = { a: inner() };\n}\n")
    assert found is not None
    call = next(r for r in found.refs if r.name == "inner")
    assert getattr(found.enclosing(call), "name", None) == "outer"


def test_a_file_the_grammar_loses_is_parsed_by_declaration() -> None:
    """Kotlin 2's `is T if cond ->` guard is newer than the grammar, whose parse of the whole file
    is then one ERROR node: each declaration, and each member of one that still fails, is parsed on
    its own, on its own lines."""
    guard = "\n".join(
        [
            "class Guarded {",
            "    fun parse(value: Any): Int = when (value) {",
            "        is String if value.isEmpty() -> 0",
            "        else -> 1",
            "    }",
            "",
            "    fun helper(): Int = 2",
            "}",
        ]
    )
    source = (
        "package demo\n\n"
        + guard
        + "\n\n"
        + "\n\n".join(f"class Plain{k} {{\n    fun size{k}(): Int = helper()\n}}" for k in range(12))
        + "\n"
    )
    found = extract("kotlin", source)
    assert found is not None
    got = {d.name: (d.line, d.scope) for d in found.defs}
    assert got["Guarded"] == (3, "") and got["helper"] == (9, "Guarded")
    assert got["Plain11"] == (56, "") and got["size11"] == (57, "Plain11")
    calls = [r for r in found.refs if r.name == "helper" and r.kind == "call"]
    assert len(calls) == 12 and all(getattr(found.enclosing(r), "name", "").startswith("size") for r in calls)


CALLS = {
    "csharp": "class A { void f() { helper(1); x.helper(2); } }",
    "scala": "object A { def f() = { helper(1); x.helper(2) } }",
    "swift": "func f() { helper(1); x.helper(2) }",
    "ruby": "def f\n  helper(1)\n  x.helper(2)\nend\n",
    "php": "<?php function f() { helper(1); $x->helper(2); }",
    "lua": "function f() helper(1); x:helper(2) end",
    "elixir": "defmodule A do\n  def f(x), do: helper(x) + X.helper(x)\nend\n",
    "zig": "fn f() void { helper(1); x.helper(2); }",
    "kotlin": "fun f() { helper(1); x.helper(2) }",
    "go": "package a\nfunc f() { helper(1); x.helper(2) }",
    "java": "class A { void f() { helper(1); x.helper(2); } }",
    "shell": 'f() {\n  helper 1\n  x=1 helper "$x"\n  # helper in a comment\n}\n',
}


@pytest.mark.parametrize("language", sorted(CALLS))
def test_a_call_and_a_method_call_are_calls_and_the_receiver_is_not(language: str) -> None:
    found = extract(language, CALLS[language])
    assert found is not None
    kinds = [r.kind for r in found.refs if r.name == "helper"]
    assert kinds and set(kinds) == {"call"}  # one a line: both, where they share one
    assert {r.kind for r in found.refs if r.name in ("x", "X")} <= {"other", "type"}


def test_the_shipped_pattern_answers_are_the_installed_grammars_own(tmp_path: Path) -> None:
    """Which query patterns each grammar can match ships with the package, since finding out
    compiles a query per pattern (2.3 s for Swift, in every indexing worker): what ships is what
    compiling every grammar's patterns afresh gives. After a grammar or a pattern changes,
    ``python -m codesight_tui.core.ingest.symbols`` writes it again."""
    from codesight_tui.core.ingest import symbol_tables

    fresh = tmp_path / "possible.json"
    symbol_tables.write_possible(fresh)
    assert json.loads(fresh.read_text()) == json.loads(symbol_tables.POSSIBLE_FILE.read_text())
    symbol_tables._ASKED.clear()
    for language in sorted(GRAMMARS):
        symbol_tables.grammar_queries(language)
    assert not symbol_tables._ASKED, "a grammar's patterns were compiled: the shipped answers are out of date"


def _by_name(rows: FileSymbols | None) -> tuple[Any, dict[str, list[int]], list[tuple[str, int, int]], list[str]]:
    """A file's rows as the index reads them: each name's uses, its calls and its imports, by name
    (the order of two names that start at one place is the walk's, and says nothing)."""
    from array import array

    assert rows is not None
    defs, names, ends, uses, calls, imports, _cut = rows
    listed = names.split("\n") if names else []
    flat, at, prev = array("i", uses), array("i", ends), 0
    by_name: dict[str, list[int]] = {}
    for name, end in zip(listed, at, strict=True):
        by_name[name] = list(flat[prev:end])
        prev = end
    c = array("i", calls)
    return (
        defs,
        by_name,
        sorted((listed[c[k]], c[k + 1], c[k + 2]) for k in range(0, len(c), 3)),
        sorted(listed[k] for k in array("i", imports)),
    )


PARITY = (
    [(lang, FIXTURES[lang][0]) for lang in sorted(FIXTURES)]
    + [(lang, src) for lang, src, _ in NAMED]
    + sorted(CALLS.items())
    + [
        (
            "python",
            "x = 1\n\n\ndef f(a):\n    return a.b.c(x) + g(a)(x)\n# f in a comment\n\n\nclass C(f):\n    y: int\n",
        ),
        ("cpp", "namespace n { template <class T> struct S { void m(); }; }\nvoid n::S<int>::m() { a::b::c(); }\n"),
        ("rust", "use std::io::{self, Read};\nfn main() { let v: Vec<u8> = io::stdin().bytes().count(); }\n"),
        ("typescript", "import { a } from 'b';\nconst f = (x: A<B>) => x.y.z();\nfunction g() { return f?.(1); }\n"),
        ("python", "def caf\u00e9(na\u00efve):\n    return na\u00efve + caf\u00e9(1)  # \u00e9t\u00e9\n"),
        ("python", "def broken(:\n    pass\nhelper(1)\n"),
    ]
)


@pytest.mark.parametrize(("language", "source"), PARITY, ids=[f"{lang}-{k}" for k, (lang, _) in enumerate(PARITY)])
def test_the_c_walk_gives_the_rows_of_the_python_walk(language: str, source: str) -> None:
    """The index's rows come from the C walk (native/symscan.c) where it is built; every fixture
    above checks the Python walk's lines, kinds and scopes, and the C walk must give the same."""
    from codesight_tui.core.ingest import symbol_tables, symbols

    fast = symbols._native_rows(language, source, None)
    if symbol_tables.native_tables(language) is None:
        assert fast is None
        return
    slow = symbols.python_rows(language, source)
    assert slow is not None
    if fast is None:  # a parse the Python walk recovers declaration by declaration
        return
    assert _by_name(fast) == _by_name(slow)
    assert symbols.extract_rows(language, source) == fast


@pytest.mark.parametrize(("language", "source"), PARITY, ids=[f"{lang}-{k}" for k, (lang, _) in enumerate(PARITY)])
def test_the_walk_deep_trees_take_gives_the_rows_of_the_query(language: str, source: str) -> None:
    """Issue 66 items 6 and 9: a tree deeper than ``DEEP`` levels is read by a walk linear in its
    nodes (the query engine slows with the depth squared, and dropped names). Where both can read
    a tree, they give the same rows."""
    from codesight_tui.core.ingest import symbols

    query = symbols.python_rows(language, source)
    walked = symbols.python_rows(language, source, walk=True)
    assert query is not None and walked is not None
    if language == "python" and "broken(" in source:
        return  # the query's rows are the declarations parsed one by one; the walk reads the tree as it is
    if language == "lua":  # the query's supertype "variable" also names a member expression, "M.flatten"
        defs, names, calls, imports = _by_name(query)
        assert _by_name(walked) == (defs, {n: u for n, u in names.items() if "." not in n}, calls, imports)
        return
    assert _by_name(walked) == _by_name(query)


def _c_walk_installed_elsewhere(package_dir: Path) -> Path | None:
    """The installed distribution's C walk, where the package imported is another copy of it:
    ``python -m pytest`` in a source tree puts that tree first on ``sys.path``, ahead of a regular
    install, and a source tree has no ``.so`` unless it was built in place (``pip install -e``)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("codesight-tui")
    except PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name.startswith("symscan.") and file.suffix in (".so", ".pyd"):
            built = Path(str(dist.locate_file(file))).resolve()
            if built.exists() and built.parent != package_dir.resolve():
                return built
    return None


def test_the_c_walk_is_built_and_used_for_the_languages_it_can_stand_in_for() -> None:
    import shutil

    from codesight_tui.core.ingest import symbol_tables, symbols

    if symbol_tables.symscan is None and shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the Python walk gives the rows")
    imported = Path(symbols.__file__).parent
    elsewhere = _c_walk_installed_elsewhere(imported) if symbol_tables.symscan is None else None
    if elsewhere is not None:
        pytest.skip(
            f"the package imported ({imported}) is not the installed one, whose C walk is {elsewhere}:"
            " `python -m pytest` puts the working directory first; build in place (pip install -e .) or run `pytest`"
        )
    assert symbol_tables.native_version() is not None, "the C walk (codesight_tui/core/ingest/native) is not built"
    walked = {lang for lang in GRAMMARS if symbol_tables.native_tables(lang) is not None}
    # Lua's names include a supertype ("variable"), and shell's are its own patterns: the query's
    assert walked == set(GRAMMARS) - {"lua", "shell"}


def _some(rows: FileSymbols | None) -> FileSymbols:
    assert rows is not None
    return rows


def _within(seconds: float, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, or a failure after ``seconds``: a guard against the minutes these shapes took,
    not a timing (each takes well under a second here)."""
    import signal

    def stop(*_: object) -> None:
        raise TimeoutError(f"took over {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


DEEP_SHAPES = [
    ("lua", "local x = " + "f(" * 50_000 + "1" + ")" * 50_000 + "\n"),
    ("python", "x = " + "f(" * 50_000 + "1" + ")" * 50_000 + "\ndef g(:\n  pass\n"),
    ("javascript", "x = " + "f(" * 50_000 + "1" + ")" * 50_000 + ";\n"),
]


@pytest.mark.parametrize(("language", "source"), DEEP_SHAPES, ids=[lang for lang, _ in DEEP_SHAPES])
def test_deep_nesting_is_read_in_time_linear_in_the_file(language: str, source: str) -> None:
    """Issue 66 item 6: 50,000 nested calls (150 KB) took the Python walk 152 s in Lua and 162 s in
    Python with one syntax error (the query engine slows with the depth squared)."""
    from codesight_tui.core.ingest import symbols

    for rows in (
        _within(20, symbols.python_rows, language, source),
        _within(20, symbols.extract_rows, language, source),
    ):
        defs, by_name, calls, _imports = _by_name(rows)
        assert by_name["f"][:3] == [1, 1, 0] and ("f", 1, 0) in calls and "x" in by_name


def test_nested_definitions_keep_their_scopes_short() -> None:
    """Issue 66 item 7: 20,000 classes nested one a line (329 KB) made a 1.2 GB index, each scope
    naming every class around it. A scope keeps the innermost ``MAX_SCOPE`` names, and a file's
    rows at most ``ROW_BYTES`` times its size: the outermost definitions, and the cut said."""
    from codesight_tui.core.ingest import symbols

    n = 20_500
    source = "".join(f"class C{i} {{\n" for i in range(n)) + "}\n" * n
    for rows in (_within(20, symbols.extract_rows, "java", source), _within(20, symbols.python_rows, "java", source)):
        assert rows is not None
        defs = rows[0]
        assert 1_000 < len(defs) < symbols.MAX_DEFS and f"symbols cut at {len(defs):,} definitions" in rows[6]
        assert defs[0][:3] == ("C0", "class", "") and defs[9][2] == ".".join(f"C{i}" for i in range(1, 9))
        assert max(len(d[2].split(".")) for d in defs) == symbols.MAX_SCOPE
        assert symbols._row_bytes(rows) <= symbols.ROW_BYTES * len(source)


def test_a_broken_file_is_recovered_in_time_linear_in_its_declarations() -> None:
    """Issue 66 item 8: ``int f( { #define X(`` repeated took 0.9 s at 25 KB and 42.4 s at 205 KB:
    each declaration was parsed with every line of the file before it."""
    from codesight_tui.core.ingest import symbols

    source = "int f( { #define X( \n" * 9_300 + "int main(void) { return helper(1); }\n"
    rows = _within(20, symbols.extract_rows, "c", source)
    defs, by_name, calls, _ = _by_name(rows)
    assert ("main", "function", "", 9_301, 9_301, 9_301) in defs and ("helper", 9_301, 9_301) in calls


@pytest.mark.parametrize("language", ["python", "lua", "javascript", "go"])
def test_a_long_chain_keeps_its_first_names_whichever_walk_reads_it(language: str) -> None:
    """Issue 66 item 9: ``x = v0+v1+...+v69999`` (480 KB): the Python walk kept 65,533 names and lost
    v0-v4468 (the query engine drops what it cannot hold), silently; the C walk kept all 70,001.
    Both keep the same names now, the first used, within ``ROW_BYTES`` times the file's size, and
    say where they were cut; a shorter chain is kept whole."""
    from codesight_tui.core.ingest import symbols

    def source(n: int) -> str:
        chain = "+".join(f"v{i}" for i in range(n))
        return {"go": f"package p\n\nvar x = {chain}\n", "javascript": f"var x = {chain};\n"}.get(
            language, f"x = {chain}\n"
        )

    got = [_some(_within(20, fn, language, source(70_000))) for fn in (symbols.python_rows, symbols.extract_rows)]
    assert got[0][1:] == got[1][1:]
    names = got[0][1].split("\n")
    assert names.index("v1") == names.index("v0") + 1 < 4
    assert f"symbols cut at {len(names):,} names" in got[0][6] and 20_000 < len(names) < 70_000
    assert symbols._row_bytes(got[0]) <= symbols.ROW_BYTES * len(source(70_000))
    short = _some(symbols.python_rows(language, source(2_000)))
    assert {f"v{i}" for i in range(2_000)} <= set(short[1].split("\n")) and short[6] == ""


def test_what_the_bounds_cut_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 66: a file past ``MAX_NAMES`` keeps its first names and says it was cut."""
    from codesight_tui.core.ingest import symbols

    monkeypatch.setattr(symbols, "MAX_NAMES", 1_000)
    source = "x = " + "+".join(f"v{i}" for i in range(3_000)) + "\n"
    for rows in (
        symbols.python_rows("python", source),
        symbols.extract_rows("python", source),
        symbols.python_rows("python", source, walk=True),
    ):
        assert rows is not None and rows[6] == "symbols cut at 1,000 names"
        assert len(rows[1].split("\n")) == 1_000 and "v0" in rows[1] and "v2999" not in rows[1]


def test_the_c_entry_points_check_their_arguments() -> None:
    """Issue 66 item 22: ``symscan.walk(object(), ...)`` and ``pack`` with name offsets past the end
    of the data segfaulted (exit 139). Each is a TypeError or ValueError now."""
    from array import array

    from codesight_tui.core.ingest import symbol_tables

    if symbol_tables.symscan is None:
        pytest.skip("the C walk is not built here")
    walk, pack = symbol_tables.symscan.walk, symbol_tables.symscan.pack
    tree = parser_for("python").parse(b"def f():\n    g()\n")
    with pytest.raises(TypeError):
        walk(object(), b"\x01" * 4, b"\x00" * 8, False, 0)
    with pytest.raises(ValueError):
        walk(tree, b"\x01" * 400, b"", False, 0)  # fewer callee fields than symbols
    assert walk(tree, b"", b"", False, 0) is not None
    empty = array("i")
    for names in (
        array("i", [0, 10**6, 0]).tobytes(),
        array("i", [5, 2, 0]).tobytes(),
        array("i", [-1, 2, 0]).tobytes(),
        array("i", [0, 1, 99]).tobytes(),
        b"\x00" * 5,
    ):
        with pytest.raises(ValueError):
            pack(b"abc", names, empty, empty, empty, empty, set())
    with pytest.raises(ValueError):  # a definition "enclosed" by a later one: the climb would never end
        pack(b"abc", b"", array("i", [0, 1]), array("i", [3, 3]), array("i", [1, 0]), array("i", [1, 1]), set())
    with pytest.raises(ValueError):
        pack(b"abc", b"", array("i", [0]), empty, empty, empty, set())


def test_an_annotation_is_read_from_code_not_from_a_docstring() -> None:
    """A docstring's ``:param ErrorStore error_store: Structure to store errors.`` typed the
    receiver as "Structure" (the parameter's own annotation, ``error_store: ErrorStore,``, came first)."""
    from codesight_tui.core.search.calls import typed_in

    text = (
        "def f(self, *, error_store: ErrorStore,\n    x):\n"
        '    """:param ErrorStore error_store: Structure to store errors."""\n    error_store.store_error()'
    )
    assert typed_in(text, "error_store") == "ErrorStore"
    assert typed_in("def f(r: Reader, w):", "r") == "Reader" and typed_in("    x: Foo = make()", "x") == "Foo"


def test_the_c_walks_stub_takes_what_the_c_code_parses() -> None:
    """Issue 67 item 4: ``symscan.pyi`` declared ``walk`` with 4 parameters where the C code reads
    5. Each entry point's ``PyArg_ParseTuple`` format and the stub's parameters are counted here,
    and mypy checks ``symbol_tables.Native`` (what the package calls) against the stub."""
    import ast
    import re
    from pathlib import Path

    from codesight_tui.core.ingest import symbols

    here = Path(symbols.__file__).parent
    c = (here / "native" / "symscan.c").read_text()
    stub = ast.parse((here / "symscan.pyi").read_text())
    declared = {f.name: len(f.args.posonlyargs) for f in stub.body if isinstance(f, ast.FunctionDef)}
    for name in ("walk", "pack"):
        body = c[c.index(f"static PyObject *{name}(") :]
        fmt = re.search(r'PyArg_ParseTuple\(args, "([^"]+)"', body)
        assert fmt is not None
        parsed = len(re.findall(r"[A-Za-z]!?", fmt.group(1).replace("*", "")))
        assert declared[name] == parsed, name
