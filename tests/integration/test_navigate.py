"""Definitions, references, callers and callees from the index (issue 51): written with their files,
replaced and dropped with them, resolved honestly, and never from a comment or a string."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight, CodeSightError
from codesight_tui.core.config import Settings
from codesight_tui.core.search.calls import go_builds, go_host
from codesight_tui.core.search.navigate import Navigation


@pytest.fixture
def cs(nav_repo: Path, settings: Settings) -> Iterator[CodeSight]:
    engine = CodeSight(nav_repo, settings=settings, embedder=HashEmbedder())
    engine.index(embed=False)
    yield engine
    engine.close()


def places(nav: Navigation) -> list[tuple[str, int, str]]:
    return [(s.path, s.line, s.kind) for s in nav.sites]


def test_definitions_references_callers_callees(cs: CodeSight) -> None:
    d = cs.definitions("LRUCache")
    assert d.resolution == "resolved" and [(c.path, c.line, c.kind) for c in d.candidates] == [
        ("store/cache.py", 5, "class")
    ]
    refs = cs.references("evict")
    # the call and the definition; the comment (line 11) and the string there are not references
    assert places(refs) == [("store/cache.py", 16, "call"), ("store/cache.py", 18, "definition")]
    callers = cs.callers("evict")
    assert [(s.path, s.line, getattr(s.within, "qualified", None)) for s in callers.sites] == [
        ("store/cache.py", 16, "LRUCache.put")
    ]
    callees = cs.callees("lookup")
    assert [(s.name, s.line, getattr(s.target, "location", None), s.resolution) for s in callees.sites] == [
        ("make_cache", 9, "app/service.py:4", "resolved"),
        ("put", 10, "store/cache.py:14", "resolved"),
        ("get", 11, "store/cache.py:10", "resolved"),
    ]
    ts = cs.callers("request")
    assert [(s.path, s.line, getattr(s.within, "name", None)) for s in ts.sites] == [("web/client.ts", 3, "fetchUser")]
    assert [(s.name, getattr(s.target, "line", None)) for s in cs.callees("fetchUser").sites] == [("request", 6)]
    # PATH:LINE names the definition around the line; Scope.name the method
    assert getattr(cs.callers("store/cache.py:19").symbol, "qualified", None) == "LRUCache.evict"
    assert getattr(cs.definitions("LRUCache.get").symbol, "location", None) == "store/cache.py:10"
    assert cs.references("evict", glob="app/").sites == [] and cs.references("evict", language="python").sites


def test_ambiguity_is_said_and_ranked(cs: CodeSight, nav_repo: Path) -> None:
    (nav_repo / "app" / "other.py").write_text(
        "def make_cache():\n    return {}\n\n\ndef use():\n    return make_cache()\n"
    )
    cs.index(embed=False)
    d = cs.definitions("make_cache")
    assert d.resolution == "one of 2 candidates" and len(d.candidates) == 2
    callers = cs.callers("make_cache")
    by_file = {s.path: s.resolution for s in callers.sites}
    assert by_file == {"app/other.py": "resolved", "app/service.py": "resolved"}  # each file's own definition
    pinned = cs.callers("app/service.py:4")  # one definition: the other file's call means its own
    assert [(s.path, s.line) for s in pinned.sites] == [("app/service.py", 9)] and pinned.resolution == "resolved"


def test_symbols_follow_their_files(cs: CodeSight, nav_repo: Path) -> None:
    (nav_repo / "app" / "service.py").write_text("def lookup(key):\n    return key\n")
    cs.index(embed=False)
    assert cs.callers("make_cache").sites == [] and not cs.definitions("make_cache").candidates
    assert cs.definitions("lookup").candidates[0].line == 1
    (nav_repo / "web" / "client.ts").unlink()
    cs.index(embed=False)
    assert not cs.definitions("fetchUser").candidates
    assert cs.store.probe() is None


def test_documents_and_configuration_get_no_symbols(cs: CodeSight, nav_repo: Path) -> None:
    (nav_repo / "README.md").write_text("# evict\n\nCall `evict()` to make room.\n")
    (nav_repo / "conf.yaml").write_text("evict: true\n")
    cs.index(embed=False)
    assert {s.path for s in cs.references("evict").sites} == {"store/cache.py"}


def test_a_target_that_names_nothing_is_one_line(cs: CodeSight) -> None:
    with pytest.raises(CodeSightError, match="no such file"):
        cs.callers("README.md:1")
    with pytest.raises(CodeSightError):
        cs.callers("   ")
    assert cs.callers("no_such_name").resolution == "not defined here"


def test_a_path_outside_is_refused_alike_whether_it_exists_or_not(cs: CodeSight, tmp_path: Path) -> None:
    """Issue 66 item 4: ``def /etc/passwd`` said "not inside ROOT" (exit 2) and ``/etc/nonexistent``
    "not defined" (exit 1): an oracle for which paths exist outside the repository."""
    there = tmp_path / "outside.py"
    there.write_text("def outside():\n    return 1\n")
    for follow in (cs.definitions, cs.references, cs.callers, cs.callees):
        said = set()
        for path in (
            str(there),
            str(tmp_path / "missing.py"),
            "/etc/passwd",
            "/etc/no-such-file-here",
            "../outside.py",
            "../missing.py",
        ):
            for target in (path, path + ":1"):
                with pytest.raises(CodeSightError) as err:
                    follow(target)
                said.add((err.value.exit_code, str(err.value).replace(path, "PATH")))
        assert said == {(2, f"PATH is not inside {cs.root}")}


def test_a_file_that_does_not_exist_is_said_so(cs: CodeSight) -> None:
    """Issue 66 item 20: ``callers nope.py:10`` said "no definitions indexed there"."""
    with pytest.raises(CodeSightError, match=r"^store/nope\.py: no such file in "):
        cs.callers("store/nope.py:10")
    (cs.root / "README.md").write_text("# notes\n")
    cs.index(embed=False)
    with pytest.raises(CodeSightError, match="no definitions indexed"):
        cs.callers("README.md:1")


def test_a_damaged_symbol_table_is_found_and_rebuilt(cs: CodeSight) -> None:
    """The symbol tables are read by the probe every index run makes, so damage there rebuilds the
    index like damage anywhere else."""
    cs.store.conn.execute("DROP TABLE sym_names")
    assert "sym_names" in (cs.store.probe() or "")
    report = cs.index(embed=False)
    assert cs.store.probe() is None
    assert [s.line for s in cs.callers("evict").sites] == [16]
    assert any("damaged" in w for w in report.warnings + cs.take_notices()), report.warnings


def test_a_stubs_callers_are_its_implementations(cs: CodeSight, nav_repo: Path) -> None:
    """A .pyi stands for the module it declares: the calls of the implementation are its callers too
    (as a language server counts them), while the implementation's own callers stay its own."""
    (nav_repo / "store" / "cache.pyi").write_text("class LRUCache:\n    def evict(self) -> None: ...\n")
    cs.index(embed=False)
    assert [s.line for s in cs.callers("store/cache.pyi:2").sites] == [16]
    assert [s.line for s in cs.callers("store/cache.py:18").sites] == [16]


def test_vendored_and_minified_code_gets_no_symbols(cs: CodeSight, nav_repo: Path) -> None:
    (nav_repo / "vendor").mkdir()
    (nav_repo / "vendor" / "lib.py").write_text("def evict():\n    return 1\n")
    (nav_repo / "web" / "bundle.min.js").write_text("function evict(){return 1}evict();\n")
    cs.index(embed=False)
    assert {c.path for c in cs.definitions("evict").candidates} == {"store/cache.py"}


def test_a_name_is_found_whatever_its_characters_and_only_in_its_own_case(cs: CodeSight, nav_repo: Path) -> None:
    """Which files use a name is kept as tokens (a name of other characters in hex): a name such as
    Ruby's ``valid?`` is found, a name in another case is not the same name, and what a changed or
    deleted file used is forgotten."""
    (nav_repo / "app" / "check.rb").write_text("def valid?(x)\n  x\nend\n\nvalid?(1)\n")
    (nav_repo / "app" / "upper.py").write_text("def Evict():\n    return 1\n\n\nEvict()\n")
    cs.index(embed=False)
    assert [(s.path, s.line) for s in cs.callers("valid?").sites] == [("app/check.rb", 5)]
    assert [(s.path, s.line) for s in cs.callers("Evict").sites] == [("app/upper.py", 5)]
    assert [(s.path, s.line) for s in cs.callers("evict").sites] == [("store/cache.py", 16)]
    (nav_repo / "app" / "check.rb").unlink()
    (nav_repo / "app" / "upper.py").write_text("def other():\n    return 1\n")
    cs.index(embed=False)
    assert cs.references("valid?").sites == [] and cs.references("Evict").sites == []
    # forgotten by the name index itself, not only left out when the rows are read
    assert not cs.store.conn.execute(
        "SELECT rowid FROM sym_names WHERE sym_names MATCH ?", ('"x' + b"valid?".hex() + '"',)
    ).fetchall()


def test_hostile_shapes_are_indexed_whole_or_said_cut(nav_repo: Path, settings: Settings) -> None:
    """Issue 66 items 6-9 through the indexer: `refs v0` lists the Lua chain as well as the Python
    one (the Python walk lost v0-v4468 of it), and a file past the names bound says so in the run's
    warnings, with its path."""
    chain = "+".join(f"v{i}" for i in range(70_000))
    (nav_repo / "chain.py").write_text(f"\n\n\nx = {chain}\n")
    (nav_repo / "chain.lua").write_text(f"\nx = {chain}\n")
    (nav_repo / "deep.lua").write_text("local x = " + "f(" * 50_000 + "1" + ")" * 50_000 + "\n")
    (nav_repo / "wide.py").write_text("y = " + "+".join(f"w{i}" for i in range(100_500)) + "\n")
    (nav_repo / "broken.lua").write_text("int f( { #define X( \n" * 9_300 + "local needle_word = 1\n")
    engine = CodeSight(nav_repo, settings=settings, embedder=HashEmbedder())
    try:
        report = engine.index(embed=False)
        said = dict(w.split(": ", 1) for w in report.warnings)
        assert sorted(said) == ["broken.lua", "chain.lua", "chain.py", "wide.py"], report.warnings
        assert said["broken.lua"] == "no symbols: its parse took too long (chunked by lines)"
        assert [h.path for h in engine.search("needle_word", mode="bm25")][:1] == ["broken.lua"]
        assert said["wide.py"].startswith("symbols cut at 100,000 names; symbols cut at ")
        assert said["chain.lua"] == said["chain.py"] and said["chain.py"].startswith("symbols cut at ")
        assert sorted((s.path, s.line) for s in engine.references("v0").sites) == [("chain.lua", 2), ("chain.py", 4)]
        assert sorted((s.path, s.line) for s in engine.references("v20000").sites) == [
            ("chain.lua", 2),
            ("chain.py", 4),
        ]
        assert [(s.path, s.line, s.kind) for s in engine.callers("f").sites] == [("deep.lua", 1, "call")]
    finally:
        engine.close()


def test_a_name_with_a_newline_is_one_name_that_is_not_defined(cs: CodeSight) -> None:
    """Issue 66 item 22: ``refs $'a\\nb'`` raised "fts5: phrase queries are not supported"."""
    for follow in (cs.references, cs.callers, cs.definitions):
        nav = follow("evict\nput")
        assert nav.resolution == "not defined here" and not nav.sites


NAV66 = {
    # Go: the built-in append beside a method named append (issue 66 items 10 and 12)
    "src/history.go": """package fzf

type History struct {
	lines []string
}

func (h *History) append(line string) {
	h.lines = append(h.lines, line)
}

type Matcher struct{}

func (m *Matcher) scan(xs []string) int {
	return m.count(xs) + len(xs)
}

func (m *Matcher) count(xs []string) int {
	return len(xs)
}
""",
    "src/terminal.go": """package fzf

type Terminal struct {
	history *History
}

func (t *Terminal) remember(line string) {
	t.history.append(line)
}

func Tokenize(text string) []string {
	var out []string
	out = append(out, text)
	return out
}
""",
    # Python: an imported function beside a property of the same name (item 11) and a value's
    # method beside a repository method (item 13)
    "rich/cells.py": """def cell_len(text):
    return len(text)
""",
    "rich/text.py": """from .cells import cell_len


class Text:
    def __init__(self, plain):
        self.plain = plain

    @property
    def cell_len(self):
        return cell_len(self.plain)

    def fit(self, width):
        return cell_len(self.plain) <= width

    def wider(self):
        return self.cell_len + 1
""",
    "rich/console.py": """import os


class Capture:
    def get(self):
        return "captured"


class Console:
    def __init__(self):
        self._environ = os.environ

    def _detect_color_system(self):
        term = self._environ.get("TERM")
        return self.pick(term)

    def pick(self, term):
        return term
""",
}


def _indexed(root: Path, files: dict[str, str], settings: Settings) -> Iterator[CodeSight]:
    """A repository of ``files`` at ``root``, indexed (BM25 and symbols)."""
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    engine = CodeSight(root, settings=settings, embedder=HashEmbedder())
    engine.index(embed=False)
    yield engine
    engine.close()


@pytest.fixture
def nav66(tmp_path: Path, settings: Settings) -> Iterator[CodeSight]:
    yield from _indexed(tmp_path / "nav66", NAV66, settings)


def sites(nav: Navigation) -> list[tuple[str, int, str]]:
    return [(s.path, s.line, s.resolution) for s in nav.sites]


def test_a_built_in_is_not_the_repositorys_namesake(nav66: CodeSight) -> None:
    """Issue 66 item 10: in fzf, `callers append` listed 287 calls of Go's built-in append as
    "resolved" calls of History.append; `callees Tokenize` listed append as History.append. A bare
    built-in is the built-in; the method is reached only through a receiver, here a field whose type
    the struct says (``history *History``)."""
    callers = nav66.callers("append")
    assert sites(callers) == [("src/terminal.go", 8, "resolved")]
    callees = nav66.callees("Tokenize")
    assert [(s.name, s.target, s.resolution) for s in callees.sites] == [("append", None, "built-in")]
    # a file that defines its own `len` shadows the built-in
    assert [(s.name, s.resolution) for s in nav66.callees("History.append").sites] == [("append", "built-in")]


def test_python_calls_resolve_through_imports_and_never_bare_to_a_method(nav66: CodeSight) -> None:
    """Issue 66 item 11: rich's bare `cell_len(...)` calls in text.py were left out of the callers of
    cells.cell_len, and said to be "resolved" calls of the property Text.cell_len (itself included)."""
    to_function = nav66.callers("rich/cells.py:1")
    assert sites(to_function) == [("rich/text.py", 10, "resolved"), ("rich/text.py", 13, "resolved")]
    assert sites(nav66.callers("Text.cell_len")) == []  # nothing calls the property: `self.cell_len + 1` reads it
    callees = nav66.callees("Text.fit")
    assert [(s.name, s.target.path if s.target else None, s.resolution) for s in callees.sites] == [
        ("cell_len", "rich/cells.py", "resolved")
    ]


def test_go_methods_are_named_by_their_receiver_type(nav66: CodeSight) -> None:
    """Issue 66 item 12: `def Matcher.scan` said "scan: not defined here" (the method's scope was
    empty); a call through the method's own receiver resolves within its type."""
    found = nav66.definitions("Matcher.scan")
    assert found.resolution == "resolved" and found.symbol is not None
    assert found.symbol.scope == "Matcher" and found.symbol.path == "src/history.go"
    callees = nav66.callees("Matcher.scan")
    assert [(s.name, s.target.qualified if s.target else None, s.resolution) for s in callees.sites] == [
        ("count", "Matcher.count", "resolved"),
        ("len", None, "built-in"),
    ]


def test_a_call_on_a_value_is_never_resolved_to_a_repository_method(nav66: CodeSight) -> None:
    """Issue 66 item 13: `self._environ.get(...)`, a mapping lookup, was "resolved" to Capture.get."""
    callees = nav66.callees("Console._detect_color_system")
    got = {s.name: (s.target.qualified if s.target else None, s.resolution) for s in callees.sites}
    assert got["get"] == ("Capture.get", "one of 1 candidates (the receiver's type is not known)")
    assert got["pick"] == ("Console.pick", "resolved")


NAV_TYPES = {
    # Python: an alias (`ib = attrib`), a re-export through a package's __init__.py beside a
    # namesake, a test's own classes, a base's method through a constructor call, a builder's chain
    "pkg/__init__.py": """from ._funcs import asdict
from ._make import attrib

ib = attr = attrib
""",
    "pkg/_funcs.py": """def asdict(inst):
    return dict(inst)
""",
    "pkg/_next.py": """def asdict(inst):
    return {}
""",
    "pkg/_make.py": """def attrib(default=None):
    return default


class _Builder:
    def add_eq(self):
        return self

    def add_repr(self):
        return self

    def build(self):
        return 1
""",
    "pkg/schema.py": """class Base:
    def load(self, data):
        return data


class Schema(Base):
    def load(self, data):
        return data

    @classmethod
    def from_dict(cls, fields):
        return cls()
""",
    "tests/test_use.py": """import pkg
from pkg import asdict
from pkg._make import _Builder
from pkg.schema import Schema


def test_local_classes():
    class Point:
        x: int = pkg.ib()

    class MySchema(Schema):
        pass

    p = Point()
    MySchema().load({"x": 1})
    asdict(p)
    b = _Builder()
    done = (
        b.add_eq()
        .add_repr()
        .build()
    )
    MySchema.from_dict({})
    return done
""",
    # Go: a package's constant typed by its const block, a struct field of an unexported type, an
    # interface's method, a value read off a field, a parameter whose type names the package
    "src/tui/tui.go": """package tui

type EventType int

const (
	Rune EventType = iota
	Start
	Resize
)

func (t EventType) AsEvent() Event {
	return Event{t}
}

type Event struct {
	Type EventType
}

type Window interface {
	Width() int
	Close()
}

type borderShape int

func (s borderShape) HasRight() bool {
	return s > 0
}

type LightWindow struct {
	border borderShape
}

func (w *LightWindow) Width() int {
	return 1
}

func (w *LightWindow) Close() {}

func (w *LightWindow) drawBorder() bool {
	shape := w.border
	return shape.HasRight()
}

func (w *LightWindow) Init() int {
	return w.setup()
}
""",
    # the same method for two platforms: the one Go builds here is meant
    "src/tui/light_unix.go": """//go:build !windows

package tui

func (w *LightWindow) setup() int {
	return 1
}
""",
    "src/tui/light_windows.go": """//go:build windows

package tui

func (w *LightWindow) setup() int {
	return 2
}
""",
    "src/terminal.go": """package fzf

import "example.com/fzf/src/tui"

type previewOpts struct {
	border int
}

func (o *previewOpts) Border() int {
	return o.border
}

type Terminal struct {
	window  tui.Window
	preview previewOpts
}

func NewTerminal(window tui.Window, box *tui.LightWindow) *Terminal {
	t := &Terminal{window: window}
	_ = tui.Start.AsEvent()
	_ = t.preview.Border()
	_ = t.window.Width()
	return t
}

func arg[T any](name string, w tui.Window) T {
	var zero T
	return zero
}

func widths(windows []tui.Window) int {
	n := 0
	for _, w := range windows {
		n += w.Width()
	}
	_ = arg[string]("a", nil)
	return n
}
""",
    # precision: two classes of one name (structlog's BoundLogger), a string that spells a name
    # beside a call of a module's function of that name, a call of another package's namesake
    "pkg/logs.py": """import sys


class BoundLoggerBase:
    def _proxy(self, name):
        return name


def add_excinfo(kw):
    kw["exc_info"] = sys.exc_info()
    return kw
""",
    "pkg/std.py": """from pkg.logs import BoundLoggerBase


class BoundLogger(BoundLoggerBase):
    def _proxy(self, name):
        return name.upper()
""",
    "pkg/twisted.py": """from pkg.logs import BoundLoggerBase


class BoundLogger(BoundLoggerBase):
    def msg(self):
        return self._proxy("msg")
""",
    "tests/test_logs.py": """from pkg.logs import BoundLoggerBase


class BoundLogger(BoundLoggerBase):
    pass


def exc_info():
    return None


def test_msg():
    b = BoundLogger()
    b.msg()
""",
    "src/encoder.go": """package fzf

type Encoder struct{}

func NewEncoder() *Encoder {
	return &Encoder{}
}

func (e *Encoder) Encode(v any) error {
	return nil
}
""",
    "src/cmd/main.go": """package main

import (
	"encoding/json"
	"os"
)

func main() {
	j := json.NewEncoder(os.Stdout)
	_ = j.Encode(1)
}
""",
    # a parameter typed by what every call passes (Jedi's inference; marshmallow's error_store)
    "pkg/errors.py": """class ErrorStore:
    def store_error(self, message):
        return message


class Other:
    def store_error(self, message):
        return None


def _call_and_store(getter, *, error_store):
    error_store.store_error(getter())


def run(getter):
    error_store = ErrorStore()
    _call_and_store(getter, error_store=error_store)
""",
}


@pytest.fixture
def nav_types(tmp_path: Path, settings: Settings) -> Iterator[CodeSight]:
    yield from _indexed(tmp_path / "navtypes", NAV_TYPES, settings)


def targets(nav: Navigation) -> dict[str, tuple[str | None, str]]:
    return {s.name: (s.target.location if s.target else None, s.resolution) for s in nav.sites}


def test_python_values_are_typed_by_their_own_lines(nav_types: CodeSight) -> None:
    """Issue 66, recall of "resolved": Jedi named these callees where codesight said "one of N" or
    "a local value" (attrs, marshmallow): an alias a package binds (`attr.ib()`), a name a package
    re-exports beside a namesake (`from attr import asdict`), a test's own class whose annotated
    field read as an assignment to it, a base's method through a constructor call
    (`MySchema().load`), a class's inherited classmethod, and a builder's chain over lines."""
    got = targets(nav_types.callees("test_local_classes"))
    assert got["ib"] == ("pkg/_make.py:1", "resolved")
    assert got["Point"] == ("tests/test_use.py:8", "resolved")
    assert got["MySchema"] == ("tests/test_use.py:11", "resolved")
    assert got["load"] == ("pkg/schema.py:7", "resolved")
    assert got["asdict"] == ("pkg/_funcs.py:1", "resolved")
    assert got["add_eq"] == ("pkg/_make.py:6", "resolved")
    assert got["add_repr"] == ("pkg/_make.py:9", "resolved")
    assert got["build"] == ("pkg/_make.py:12", "resolved")
    assert got["from_dict"] == ("pkg/schema.py:11", "resolved")


def test_go_values_are_typed_by_their_declarations(nav_types: CodeSight) -> None:
    """Issue 66, recall of "resolved" against go/types (fzf, urfave/cli): a package's constant
    (`tui.Start.AsEvent()`, typed by its const block), a field of an unexported type, a call through
    an interface (its method is a definition now), a value read off a field (`shape := w.border`),
    and a parameter typed `*tui.LightWindow` that does not hide the package tui."""
    got = targets(nav_types.callees("NewTerminal"))
    assert got["AsEvent"] == ("src/tui/tui.go:11", "resolved")
    assert got["Border"] == ("src/terminal.go:9", "resolved")
    assert got["Width"] == ("src/tui/tui.go:20", "resolved")
    assert targets(nav_types.callees("drawBorder"))["HasRight"] == ("src/tui/tui.go:26", "resolved")
    window = nav_types.definitions("Window.Width")
    assert window.symbol is not None and (window.symbol.kind, window.symbol.scope) == ("method", "Window")


def test_go_ranges_generics_and_build_constraints(nav_types: CodeSight) -> None:
    """Issue 66, against go/types on this machine: an element of a range over a slice is typed
    (`for _, f := range flags`, urfave/cli), an instantiated generic call `arg[string](a, b)` is a
    call of arg (the grammar reads it as an index expression), and of two files that define one
    method for two platforms, the one Go builds here is meant (fzf's light_unix.go)."""
    got = targets(nav_types.callees("widths"))
    assert got["Width"] == ("src/tui/tui.go:20", "resolved")
    assert got["arg"] == ("src/terminal.go:26", "resolved")
    assert sites(nav_types.callers("arg")) == [("src/terminal.go", 36, "resolved")]
    assert targets(nav_types.callees("Init"))["setup"] == ("src/tui/light_unix.go:5", "resolved")


def test_a_python_parameter_is_typed_by_its_calls(nav_types: CodeSight) -> None:
    """Issue 66: marshmallow's `error_store.store_error(...)` in `_call_and_store`, whose parameter
    every call passes an ErrorStore, stayed "one of N"."""
    got = targets(nav_types.callees("_call_and_store"))
    assert got["store_error"] == ("pkg/errors.py:2", "resolved")


@pytest.mark.parametrize(
    ("path", "head", "built"),
    [
        ("tui/dummy.go", "//go:build !tcell && !windows\n", True),
        ("tui/tcell.go", "//go:build tcell || windows\n", False),
        ("x_windows.go", "", False),
        ("x_linux_amd64.go", "", True),
        ("x_linux_arm64.go", "", False),
        ("y.go", "// a comment\n", True),
        ("z.go", "//go:build (linux || darwin) && !go1.4\n", False),
        ("w.go", "//go:build linux && (amd64 || arm64)\n", True),
    ],
)
def test_go_build_constraints_are_read_as_go_reads_them(path: str, head: str, built: bool) -> None:
    assert go_builds(path, head, go_host("linux", "x86_64")) is built


def test_a_namesake_is_never_what_a_call_resolves_to(nav_types: CodeSight) -> None:
    """Issue 66, precision on repositories never tuned on (structlog, BurntSushi/toml): of two
    classes named BoundLogger, a call through one was resolved to the other's method; a string
    `kw["exc_info"]` beside `sys.exc_info()` made the call's form unknown, and a test's fixture
    exc_info its "resolved" target; `json.NewEncoder(...)` was typed by the repository's own
    NewEncoder."""
    assert targets(nav_types.callees("pkg/twisted.py:5"))["_proxy"] == ("pkg/logs.py:5", "resolved")
    assert targets(nav_types.callees("test_msg"))["msg"][1] != "resolved"
    assert targets(nav_types.callees("add_excinfo"))["exc_info"][1] != "resolved"
    assert targets(nav_types.callees("src/cmd/main.go:8"))["Encode"][1] != "resolved"


def test_a_parameter_passed_along_a_long_chain_is_bounded(tmp_path: Path, settings: Settings) -> None:
    """A parameter typed by its calls is followed through at most a few callers, and a value typed
    by another value at most a few dozen deep: chains of 600 answer at once, with no recursion past
    Python's limit."""
    chain = "\n\n".join(f"def f{k}(store):\n    return f{k + 1}(store=store)" for k in range(600))
    text = (
        "class ErrorStore:\n    def store_error(self):\n        return 1\n\n\n"
        "class Other:\n    def store_error(self):\n        return 2\n\n\n"
        f"{chain}\n\n\ndef f600(store):\n    return store.store_error()\n\n\n"
        "def run():\n    store = ErrorStore()\n    return f0(store=store)\n"
    )
    # and a value typed by another's, 600 deep: `v1 = v0.nxt`, `v2 = v1.nxt`, ...
    values = "\n".join(f"    v{k + 1} = v{k}.nxt" for k in range(600))
    node = f"class Node:\n    def __init__(self):\n        self.nxt = Node()\n\n    def go(self):\n        return 1\n\n\ndef walk():\n    v0 = Node()\n{values}\n    return v600.go()\n"
    for engine in _indexed(tmp_path / "chain", {"chain.py": text, "node.py": node}, settings):
        got = targets(engine.callees("f600"))
        assert got["store_error"][1] != "resolved"  # too far from the one call that says what it is
        assert "go" in targets(engine.callees("walk"))
