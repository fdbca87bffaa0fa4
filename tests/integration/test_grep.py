"""Exact and regex search from the index (issue 68): the plan, the trigram table kept with the
chunks, answers that match the disk and not a stale index, and bad input said in one line."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import snapshot_tree, wait_for, write_tree

from codesight_tui.core.config import Settings
from codesight_tui.core.engine import CodeSight
from codesight_tui.core.errors import UsageError
from codesight_tui.core.search import grep as grep_mod
from codesight_tui.core.search import pattern as pattern_mod
from codesight_tui.core.search.contract import Cancel, Cancelled, Filters, GrepOptions, SearchRequest
from codesight_tui.core.store import grams

FILES = {
    "src/net.py": (
        "import socket\n\n\n"
        "class Client:\n"
        "    def send(self, data):\n"
        "        try:\n"
        "            self.sock.sendall(data)\n"
        "        except ConnectionResetError:\n"
        "            log('connection reset by peer')\n"
        "        # TODO(ana): retry\n"
    ),
    "src/util.rs": (
        "fn parse(s: &str) -> Option<u32> {\n"
        "    s.trim().parse().ok().unwrap_or(0).into()\n"
        "}\n\n"
        "struct Server;\n\n"
        "impl Server {\n"
        "    fn run(&self) {}\n"
        "}\n"
    ),
    "src/main.go": "package main\n\nfunc (s *Server) Start() error {\n\treturn nil // TODO(bob): ports\n}\n",
    "docs/notes.md": "# Notes\n\nThe Connection Reset case: see net.py.\nCafé straße naïve\n",
    "web/app.js": "const x = foo->bar(1);\nexport function handle(req) { return req.body }\n",
}


@pytest.fixture
def cs(tmp_path: Path, settings: Settings) -> CodeSight:
    engine = CodeSight(write_tree(tmp_path / "repo", FILES), settings=settings)
    engine.index(embed=False)
    return engine


def lines_of(cs: CodeSight, pattern: str, **options: object) -> set[tuple[str, int]]:
    answer = cs.search(SearchRequest(pattern, limit=10_000, grep=GrepOptions(**options)))  # type: ignore[arg-type]
    return {(h.path, h.line) for h in answer}


def by_python(root: Path, pattern: str, flags: int = 0) -> set[tuple[str, int]]:
    """What Python's re finds line by line (the lines ripgrep counts: none after the last newline),
    the reference for ASCII patterns."""
    out = set()
    for rel in FILES:
        for n, line in enumerate((root / rel).read_text().splitlines(), start=1):
            if re.search(pattern, line, flags):
                out.add((rel, n))
    return out


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [
        ("connection reset", 0),
        ("connection reset", re.I),
        (r"TODO\(\w+\)", 0),
        (r"^func \(s \*Server\)", 0),
        (r"\.unwrap_or\(", 0),
        (r"foo->bar\(", 0),
        (r"(send|run)\(", 0),
        (r"^\s*fn ", 0),
        (r"\w+\(\)", 0),
        (r"[A-Z][a-z]+Error", 0),
        (r"s(ock)?\.", 0),
        (r"def|fn", 0),
        (r"\d+", 0),
        (r"^$", 0),
    ],
)
def test_every_line_python_finds_and_no_other(cs: CodeSight, pattern: str, flags: int) -> None:
    case = "insensitive" if flags & re.I else "sensitive"
    assert lines_of(cs, pattern, case=case) == by_python(cs.root, pattern, flags)


def test_the_plan_asks_for_what_every_match_holds() -> None:
    assert pattern_mod.plan("connection reset").fts() is not None
    assert pattern_mod.plan(r"\w+\(\)").fts() is None  # no trigram: every file
    assert pattern_mod.plan("ab").fts() is None
    assert pattern_mod.plan(r"(foo|ba)bar").text == "bar"  # "bar" is required; "ba" has no trigram
    alternation = pattern_mod.plan(r"(alpha|beta)x")
    assert alternation.op == "or" and {p.text for p in alternation.parts} == {"alpha", "beta"}
    assert pattern_mod.plan(r"x(abc)?y").fts() is None  # optional: not required
    assert pattern_mod.plan(r"(abc)+").text == "abc"
    assert pattern_mod.plan(r"\pL+abc").fts() is None  # RE2 syntax Python cannot read: every file
    assert pattern_mod.plan("a.c", fixed=True).text == "a.c"
    long = pattern_mod.plan("x" * 20 + "".join(chr(97 + k % 26) for k in range(200)), fixed=True).fts()
    assert long is not None and long.count(" AND ") == pattern_mod.MAX_TRIGRAMS - 1
    assert '"xxx"' in long and '"the"' not in long  # the rarest-looking trigrams, not the commonest
    assert pattern_mod.plan("foo\r\nbar", fixed=True).op == "and"  # a line break is no trigram's part
    assert pattern_mod.plan("abc\\rdef").parts == (pattern_mod.Query("lit", "abc"), pattern_mod.Query("lit", "def"))


def test_the_plan_is_held_by_text_as_its_literals_say() -> None:
    plan = pattern_mod.plan(r"(alpha|beta)_(gamma)+")
    assert plan.holds("x = alpha_gamma", False) and plan.holds("beta and gamma", False)
    assert not plan.holds("alpha alone", False) and not plan.holds("ALPHA_GAMMA", False)
    assert plan.holds("ALPHA_GAMMA".casefold(), True) and pattern_mod.ALL.holds("", False)


def test_the_index_text_narrows_by_case_and_whole_literals(tmp_path: Path, settings: Settings) -> None:
    files = {"a.sql": "UPDATE t SET x = 1;\n", "b.py": "def update(): pass\n", "c.py": "up_date = 1; pdate = 2\n"}
    engine = CodeSight(write_tree(tmp_path / "r", files), settings=settings)
    engine.index(embed=False)
    plan = pattern_mod.plan("UPDATE")
    assert grep_mod.candidates(engine.store, plan) == {"a.sql", "b.py"}  # the trigrams fold case
    assert grep_mod.candidates(engine.store, plan, sensitive=True) == {"a.sql"}  # the text does not
    assert grep_mod.candidates(engine.store, plan, sensitive=False) == {"a.sql", "b.py"}
    assert lines_of(engine, "UPDATE") == {("a.sql", 1)} and lines_of(engine, "(?i)UPDATE") == {
        ("a.sql", 1),
        ("b.py", 1),
    }
    assert lines_of(engine, "Update", case="insensitive") == {("a.sql", 1), ("b.py", 1)}
    assert lines_of(engine, "(?i:UPDATE)") == {("a.sql", 1), ("b.py", 1)}


def test_the_index_narrows_the_files_read(cs: CodeSight) -> None:
    named = grep_mod.candidates(cs.store, pattern_mod.plan("unwrap_or"))
    assert named == {"src/util.rs"}
    assert grep_mod.candidates(cs.store, pattern_mod.plan("ConnectionReset")) == {"src/net.py"}
    assert grep_mod.candidates(cs.store, pattern_mod.plan(r"\w+")) is None


def test_case_word_fixed_and_smart_case(cs: CodeSight) -> None:
    assert lines_of(cs, "CONNECTION RESET", case="insensitive") == {("src/net.py", 9), ("docs/notes.md", 3)}
    assert lines_of(cs, "connection reset", case="smart") == {("src/net.py", 9), ("docs/notes.md", 3)}
    assert lines_of(cs, "Connection Reset", case="smart") == {("docs/notes.md", 3)}
    assert lines_of(cs, "Server", word=True) == {("src/util.rs", 5), ("src/util.rs", 7), ("src/main.go", 3)}
    assert lines_of(cs, "Serve", word=True) == set()
    assert lines_of(cs, "s.trim().parse()", fixed=True) == {("src/util.rs", 2)}
    assert lines_of(cs, "STRASSE", case="insensitive") == set()  # simple case folding, as rg's
    assert lines_of(cs, r"caf\w", case="sensitive") == set() and lines_of(cs, r"Caf\w") == {("docs/notes.md", 4)}


def test_a_hit_says_where_and_what_it_is_in(cs: CodeSight) -> None:
    (hit,) = cs.search(SearchRequest("sendall", grep=GrepOptions(before=1, after=1)))
    assert (hit.path, hit.line, hit.start_line, hit.end_line) == ("src/net.py", 7, 6, 8)
    assert hit.match_text == "            self.sock.sendall(data)" and hit.spans == ((22, 29),)
    assert hit.column == 23 and hit.found_by == "grep"
    assert hit.scope == "Client.send"
    (cafe,) = cs.search(SearchRequest("naïve", grep=GrepOptions()))
    assert cafe.spans == ((12, 17),) and cafe.column == 15  # byte columns, as rg and vim count


def test_an_edited_file_is_found_by_its_new_content_without_watch(cs: CodeSight) -> None:
    assert lines_of(cs, "unwrap_or") == {("src/util.rs", 2)}
    (cs.root / "src" / "util.rs").write_text("fn parse(s: &str) -> u32 {\n    s.len() as u32 // brand_new_word\n}\n")
    assert lines_of(cs, "unwrap_or") == set()  # the old content, still in the index: not an answer
    assert lines_of(cs, "brand_new_word") == {("src/util.rs", 2)}  # the index has not seen it
    (cs.root / "src" / "net.py").unlink()
    assert lines_of(cs, "connection reset") == set()


def test_an_edited_file_is_found_by_its_new_content_with_watch(cs: CodeSight) -> None:
    watcher = cs.watch(embed=False)
    try:
        assert wait_for(watcher.idle, 30) and cs.context.unindexed() == set()  # caught up: nothing pending
        (cs.root / "src" / "main.go").write_text("package main\n\nfunc watched_word() {}\n")
        (cs.root / "src" / "fresh.go").write_text("package main // watched_word too\n")
        expected = {("src/main.go", 3), ("src/fresh.go", 1)}
        assert wait_for(lambda: lines_of(cs, "watched_word") == expected, 10)
        assert wait_for(
            lambda: grep_mod.candidates(cs.store, pattern_mod.plan("watched_word")) == {p for p, _ in expected}, 30
        )
        assert lines_of(cs, "watched_word") == expected and lines_of(cs, "Start") == set()
    finally:
        watcher.stop(timeout=5)


def test_a_watcher_says_what_it_has_not_indexed_yet(tmp_path: Path) -> None:
    from codesight_tui.core.store.watch import Batch, Watcher

    release = threading.Event()
    taken: list[Batch] = []

    def handle(batch: Batch) -> None:
        taken.append(batch)
        release.wait(10)

    w = Watcher(tmp_path, handle, quiet=0.05, poll=False)
    assert w.unindexed() is None  # not running: it knows nothing
    w.start()
    try:
        w.push([("a.py", "modified")])
        assert w.unindexed() == {"a.py"}  # pending
        assert wait_for(lambda: bool(taken), 5)
        w.push([("b.py", "added")])
        assert w.unindexed() == {"a.py", "b.py"}  # one being handled, one pending
        w.request_full()
        assert w.unindexed() is None  # a walk of the whole tree is due: every file is asked
        release.set()
        assert wait_for(w.idle, 10) and w.unindexed() == set()
    finally:
        release.set()
        w.stop()
    assert Watcher(tmp_path, handle, poll=True).unindexed() is None


def test_cut_lines_and_masked_secrets_are_found_as_they_are_on_disk(tmp_path: Path, settings: Settings) -> None:
    key = "AKIA" + "Q" * 16
    long_line = "x = [" + ", ".join(f"'item{k}'" for k in range(3000)) + "]\n"
    conf = "import os\n" * 50 + f"AWS_KEY = '{key}'\n" + "DEBUG = True\n" * 50
    root = write_tree(tmp_path / "r", {"conf.py": conf, "data.py": long_line, "other.py": "x = 1\n"})
    engine = CodeSight(root, settings=settings)
    engine.index(embed=False)
    conn = engine.store.conn
    assert [p for (p,) in conn.execute("SELECT path FROM grams_whole")] == []  # no file is read whole
    assert [p for (p,) in conn.execute("SELECT DISTINCT path FROM grams_lines")] == ["data.py"]  # kept whole
    assert key not in "".join(c for (c,) in conn.execute("SELECT content FROM grams_lines"))
    cut = "'item1499', 'item1500'"
    assert grep_mod.candidates(engine.store, pattern_mod.plan(cut)) == {"data.py"}  # the index names it
    assert lines_of(engine, cut) == {("data.py", 1)}  # across a cut
    assert lines_of(engine, key) == {("conf.py", 51)}  # grep reads the user's own file
    assert lines_of(engine, "AWS_KEY = 'AKIA") == {("conf.py", 51)}  # a match over the secret's edge
    assert grep_mod.candidates(engine.store, pattern_mod.plan(key)) == set()  # the secret is not in the index
    indexed = grep_mod.indexed_files(engine.store, None, ())
    conf_file = next(f for f in indexed if f.path == "conf.py")
    assert grep_mod.masked_lines(engine.store, root, conf_file, 1 << 20) == (
        (conf.index("AWS"), conf.index("\nDEBUG")),
    )
    (root / "conf.py").write_text(conf.replace(key, "AKIA" + "R" * 16))  # changed, not indexed yet
    assert lines_of(engine, "AKIAR") == {("conf.py", 51)} and lines_of(engine, key) == set()


def test_an_index_with_cut_lines_read_whole_is_brought_up_to_date(tmp_path: Path, settings: Settings) -> None:
    long_line = "x = [" + ", ".join(f"'item{k}'" for k in range(3000)) + "]\n"
    root = write_tree(tmp_path / "r", {"data.py": long_line})
    engine = CodeSight(root, settings=settings)
    engine.index(embed=False)
    with engine.store.transaction():  # as an older codesight left it: no cut lines kept whole
        engine.store.conn.execute("DROP TABLE lines_grams")
        engine.store.conn.execute("DROP TABLE grams_lines")
        engine.store.conn.execute("DELETE FROM meta WHERE key=?", (grams.LINES,))
    assert grep_mod.candidates(engine.store, pattern_mod.plan("item1499")) is None  # every file is read
    assert lines_of(engine, "'item1499', 'item1500'") == {("data.py", 1)}
    engine.index(embed=False)
    assert grams.ready(engine.store.conn) and engine.store.quick_check(deep=True) is None
    assert grep_mod.candidates(engine.store, pattern_mod.plan("'item1499', 'item1500'")) == {"data.py"}


def test_an_index_from_before_grep_is_read_whole_then_built(cs: CodeSight) -> None:
    with cs.store.transaction():
        cs.store.conn.execute("DELETE FROM meta WHERE key=?", (grams.READY,))
    answer = cs.search(SearchRequest("unwrap_or", grep=GrepOptions()))
    assert [h.path for h in answer] == ["src/util.rs"] and "every file was read" in answer.notices[0]
    cs.index(embed=False)
    assert grams.ready(cs.store.conn)
    assert grep_mod.candidates(cs.store, pattern_mod.plan("unwrap_or")) == {"src/util.rs"}


def test_bad_input_is_one_line(cs: CodeSight) -> None:
    def said(pattern: str, **options: object) -> str:
        with pytest.raises(UsageError) as caught:
            cs.search(SearchRequest(pattern, grep=GrepOptions(**options)))  # type: ignore[arg-type]
        assert "\n" not in str(caught.value) and caught.value.exit_code == 2
        return str(caught.value)

    assert said("foo(bar") == "invalid regex at column 4: missing ), unterminated subpattern"
    assert "column" in said("a{2,1}")
    assert said("").startswith("the pattern is empty")
    assert "NUL" in said("a\x00b")
    assert "at most 64 KB" in said("x" * 100_000)
    with pytest.raises(UsageError, match="invalid path filter"):
        cs.search(SearchRequest("x", filters=Filters(glob="[[["), grep=GrepOptions()))
    assert cs.search(SearchRequest("import", filters=Filters(glob="*.nothing"), grep=GrepOptions())) == []


def test_a_hostile_pattern_finishes_in_linear_time(tmp_path: Path, settings: Settings) -> None:
    root = write_tree(tmp_path / "r", {"a.txt": "a" * 1_000_000 + "\n"})
    engine = CodeSight(root, settings=settings.model_copy(update={"max_file_size": 2_000_000}))
    engine.index(embed=False)
    t0 = time.perf_counter()
    assert lines_of(engine, "(a+)+$") == {("a.txt", 1)} and lines_of(engine, "(a+)+b") == set()
    assert time.perf_counter() - t0 < 1.0


def test_grep_never_writes_to_the_repository(cs: CodeSight) -> None:
    before = snapshot_tree(cs.root)
    for pattern in ("import", r"\w+", "nothing at all here"):
        cs.search(SearchRequest(pattern, grep=GrepOptions(case="smart")))
    assert snapshot_tree(cs.root) == before


def test_a_cancelled_grep_stops(cs: CodeSight) -> None:
    token = Cancel()
    token.cancel()
    with pytest.raises(Cancelled):
        cs.search(SearchRequest(r"\w", grep=GrepOptions(), cancel=token))


def test_max_per_file_and_limit(cs: CodeSight) -> None:
    every = lines_of(cs, r"\S")
    assert len(cs.search(SearchRequest(r"\S", limit=3, grep=GrepOptions()))) == 3
    per = cs.search(SearchRequest(r"\S", limit=1000, grep=GrepOptions(max_per_file=1)))
    assert len(per) == len({p for p, _ in every}) and all(
        h.line == min(n for p, n in every if p == h.path) for h in per
    )


if sys.platform == "win32":  # pragma: no cover
    pytest.skip("POSIX paths", allow_module_level=True)


def test_garbage_in_the_trigram_segments_is_found_by_the_periodic_check(tmp_path: Path, settings: Settings) -> None:
    """SQLite's quick_check reads the b-trees, not what a full-text segment's blob holds: the
    periodic (deep) check asks each FTS5 table to check its own segments."""
    import sqlite3

    root = write_tree(tmp_path / "r", {f"m{i}.py": f"def f_{i}(x):\n    return x + {i}\n" * 40 for i in range(60)})
    engine = CodeSight(root, settings=settings)
    engine.index(embed=False)
    engine.close()
    db = next(settings.data_dir.glob("*/index.db"))
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = [
        p for (p,) in con.execute("SELECT pageno FROM dbstat WHERE name = 'chunks_grams_data' AND pagetype = 'leaf'")
    ]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    raw = bytearray(db.read_bytes())
    at = (sorted(pages)[len(pages) // 2] - 1) * size
    raw[at + 100 : at + size - 100] = (bytes(range(256)) * (size // 256 + 1))[: size - 200]
    db.write_bytes(bytes(raw))
    damaged = CodeSight(root, settings=settings)
    assert damaged.store.quick_check() is None  # the b-trees are whole
    found = damaged.store.quick_check(deep=True)
    assert found is not None and "malformed" in found


def test_a_surfaces_own_watcher_says_what_its_runs_have_not_indexed(cs: CodeSight) -> None:
    """The TUI indexes its watcher's batches later, in its own runs: ChangesSince keeps each batch's
    paths until a run has read them, and exact search reads those from disk meanwhile."""
    from codesight_tui.core.store.watch import Batch, ChangesSince

    def handle(batch: Batch) -> None:
        changes.take(batch.paths)  # as the TUI's handler: the run comes later

    watcher = cs.watcher(handle, quiet=0.05, poll=False)
    changes = ChangesSince(watcher)
    cs.track_changes(changes)
    assert cs.context.unindexed() is None  # not running: nothing known
    watcher.start()
    try:
        assert cs.context.unindexed() == set()
        (cs.root / "src" / "util.rs").write_text("fn tracked_word() {}\n")
        watcher.push([("src/util.rs", "modified")])
        assert wait_for(lambda: watcher.idle() and changes.unindexed() == {"src/util.rs"}, 10)
        assert lines_of(cs, "tracked_word") == {("src/util.rs", 1)}  # not indexed, read from disk
        cs.index(embed=False, paths=["src/util.rs"])
        changes.indexed(["src/util.rs"])
        assert changes.unindexed() == set() and lines_of(cs, "tracked_word") == {("src/util.rs", 1)}
    finally:
        watcher.stop()


def test_files_searched_together_answer_as_each_alone(tmp_path: Path, settings: Settings) -> None:
    """Batches of files are searched as one text (a line with a NUL between two files): a
    pattern that matches that line, or that reads the text's ends (\\A, \\z, (?-m)), answers
    as each file alone does."""
    from codesight_tui.core.search.pattern import compile_pattern

    tree = {f"m/f{k:02d}.py": f"import os\nx = {k}\n\n{'# ok' if k % 3 else 'y'}\n" for k in range(80)}
    tree["m/g.txt"] = "last line without a newline ok"
    engine = CodeSight(write_tree(tmp_path / "repo", tree), settings=settings)
    engine.index(embed=False)
    for pattern in [r"^.$", r"^[^a-z]*$", r"\Aimport", r"ok\z", r"(?-m)^x", r"^$", r"ok$", r"^\s*#", "os", r"\bx\b"]:
        compiled = compile_pattern(pattern, GrepOptions())
        alone = {
            (rel, h.line)
            for rel in tree
            for h in grep_mod.line_hits(compiled, rel, "", (engine.root / rel).read_bytes(), None)
        }
        assert lines_of(engine, pattern) == alone, pattern


def test_the_lines_made_in_c_are_those_made_in_python(cs: CodeSight, monkeypatch: pytest.MonkeyPatch) -> None:
    assert grep_mod.linescan is not None  # built with the package
    data = "naïve x = 1  # naïve\nplain naïve\n\nend naïve".encode()
    for pattern, options in [
        ("naïve", {}),
        ("na", {"every_span": False}),
        ("naïve", {"word": True}),
        ("x*", {}),
        (r"\w+", {}),
        ("$", {}),
    ]:
        compiled = compile_pattern_of(pattern, **options)
        every = bool(options.get("every_span", True))
        for limit in (None, 2):
            made_in_c = grep_mod.line_hits(compiled, "a.py", "python", data, limit, every_span=every)
            with monkeypatch.context() as m:
                m.setattr(grep_mod, "linescan", None)
                made_in_python = grep_mod.line_hits(compiled, "a.py", "python", data, limit, every_span=every)
            assert made_in_c == made_in_python and made_in_c, (pattern, options, limit)


def compile_pattern_of(pattern: str, **options: object) -> pattern_mod.Compiled:
    return pattern_mod.compile_pattern(pattern, GrepOptions(**options))  # type: ignore[arg-type]


def test_a_file_without_a_required_character_is_not_scanned() -> None:
    test = pattern_mod.plan(r"^\s+#", shortest=1).test()
    assert test is not None and test(b"  # yes") and not test(b"no hash here")
    either = pattern_mod.plan(r"(=>|#)\s", shortest=1).test()
    assert either is not None and either(b"a => b") and either(b"# c") and not either(b"plain")
    assert pattern_mod.plan(r"\w+\s", shortest=1).test() is None  # nothing required
    assert compile_pattern_of(r"^\s+#").test is not None
    assert compile_pattern_of(r"(?i)^\s+#").test is None and compile_pattern_of("#", case="insensitive").test is None


def test_the_enclosing_definition_of_many_lines(tmp_path: Path, settings: Settings) -> None:
    body = "".join(f"    def m{k}(self):\n        return call()\n\n" for k in range(40))
    source = f"class A:\n{body}    class B:\n        def inner(self):\n            call()\n\ncall()\n"
    engine = CodeSight(write_tree(tmp_path / "repo", {"a.py": source}), settings=settings)
    engine.index(embed=False)
    hits = engine.search(SearchRequest(r"call\(\)", limit=1000, grep=GrepOptions()))
    assert [h.scope for h in hits[:41]] == [f"A.m{k}" for k in range(40)] + ["A.B.inner"]  # the innermost
    assert len(hits) == 42 and hits[-1].scope != "A.B.inner"  # outside every definition: its chunk's, if any
