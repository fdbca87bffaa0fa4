"""Definitions, references, callers and callees from the index (issue 51): written with their files,
replaced and dropped with them, resolved honestly, and never from a comment or a string."""

from __future__ import annotations

import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight, CodeSightError


@pytest.fixture
def cs(nav_repo, settings):
    engine = CodeSight(nav_repo, settings=settings, embedder=HashEmbedder())
    engine.index(embed=False)
    yield engine
    engine.close()


def places(nav):
    return [(s.path, s.line, s.kind) for s in nav.sites]


def test_definitions_references_callers_callees(cs):
    d = cs.definitions("LRUCache")
    assert d.resolution == "resolved" and [(c.path, c.line, c.kind) for c in d.candidates] == [("store/cache.py", 5, "class")]
    refs = cs.references("evict")
    # the call and the definition; the comment (line 11) and the string there are not references
    assert places(refs) == [("store/cache.py", 16, "call"), ("store/cache.py", 18, "definition")]
    callers = cs.callers("evict")
    assert [(s.path, s.line, s.within.qualified) for s in callers.sites] == [("store/cache.py", 16, "LRUCache.put")]
    callees = cs.callees("lookup")
    assert [(s.name, s.line, s.target.location, s.resolution) for s in callees.sites] == [
        ("make_cache", 9, "app/service.py:4", "resolved"), ("put", 10, "store/cache.py:14", "resolved"),
        ("get", 11, "store/cache.py:10", "resolved")]
    ts = cs.callers("request")
    assert [(s.path, s.line, s.within.name) for s in ts.sites] == [("web/client.ts", 3, "fetchUser")]
    assert [(s.name, s.target.line) for s in cs.callees("fetchUser").sites] == [("request", 6)]
    # PATH:LINE names the definition around the line; Scope.name the method
    assert cs.callers("store/cache.py:19").symbol.qualified == "LRUCache.evict"
    assert cs.definitions("LRUCache.get").symbol.location == "store/cache.py:10"
    assert cs.references("evict", glob="app/").sites == [] and cs.references("evict", language="python").sites


def test_ambiguity_is_said_and_ranked(cs, nav_repo):
    (nav_repo / "app" / "other.py").write_text("def make_cache():\n    return {}\n\n\ndef use():\n    return make_cache()\n")
    cs.index(embed=False)
    d = cs.definitions("make_cache")
    assert d.resolution == "one of 2 candidates" and len(d.candidates) == 2
    callers = cs.callers("make_cache")
    by_file = {s.path: s.resolution for s in callers.sites}
    assert by_file == {"app/other.py": "resolved", "app/service.py": "resolved"}  # each file's own definition
    pinned = cs.callers("app/service.py:4")  # one definition: the other file's call means its own
    assert [(s.path, s.line) for s in pinned.sites] == [("app/service.py", 9)] and pinned.resolution == "resolved"


def test_symbols_follow_their_files(cs, nav_repo):
    (nav_repo / "app" / "service.py").write_text("def lookup(key):\n    return key\n")
    cs.index(embed=False)
    assert cs.callers("make_cache").sites == [] and not cs.definitions("make_cache").candidates
    assert cs.definitions("lookup").candidates[0].line == 1
    (nav_repo / "web" / "client.ts").unlink()
    cs.index(embed=False)
    assert not cs.definitions("fetchUser").candidates
    assert cs.store.probe() is None


def test_documents_and_configuration_get_no_symbols(cs, nav_repo):
    (nav_repo / "README.md").write_text("# evict\n\nCall `evict()` to make room.\n")
    (nav_repo / "conf.yaml").write_text("evict: true\n")
    cs.index(embed=False)
    assert {s.path for s in cs.references("evict").sites} == {"store/cache.py"}


def test_a_target_that_names_nothing_is_one_line(cs):
    with pytest.raises(CodeSightError, match="no such file"):
        cs.callers("README.md:1")
    with pytest.raises(CodeSightError):
        cs.callers("   ")
    assert cs.callers("no_such_name").resolution == "not defined here"


def test_a_path_outside_is_refused_alike_whether_it_exists_or_not(cs, tmp_path):
    """Issue 66 item 4: ``def /etc/passwd`` said "not inside ROOT" (exit 2) and ``/etc/nonexistent``
    "not defined" (exit 1): an oracle for which paths exist outside the repository."""
    there = tmp_path / "outside.py"
    there.write_text("def outside():\n    return 1\n")
    for follow in (cs.definitions, cs.references, cs.callers, cs.callees):
        said = set()
        for path in (str(there), str(tmp_path / "missing.py"), "/etc/passwd", "/etc/no-such-file-here",
                     "../outside.py", "../missing.py"):
            for target in (path, path + ":1"):
                with pytest.raises(CodeSightError) as err:
                    follow(target)
                said.add((err.value.exit_code, str(err.value).replace(path, "PATH")))
        assert said == {(2, f"PATH is not inside {cs.root}")}


def test_a_file_that_does_not_exist_is_said_so(cs):
    """Issue 66 item 20: ``callers nope.py:10`` said "no definitions indexed there"."""
    with pytest.raises(CodeSightError, match=r"^store/nope\.py: no such file in "):
        cs.callers("store/nope.py:10")
    (cs.root / "README.md").write_text("# notes\n")
    cs.index(embed=False)
    with pytest.raises(CodeSightError, match="no definitions indexed"):
        cs.callers("README.md:1")


def test_a_damaged_symbol_table_is_found_and_rebuilt(cs):
    """The symbol tables are read by the probe every index run makes, so damage there rebuilds the
    index like damage anywhere else."""
    cs.store.conn.execute("DROP TABLE sym_names")
    assert "sym_names" in (cs.store.probe() or "")
    report = cs.index(embed=False)
    assert cs.store.probe() is None
    assert [s.line for s in cs.callers("evict").sites] == [16]
    assert any("damaged" in w for w in report.warnings + cs.take_notices()), report.warnings


def test_a_stubs_callers_are_its_implementations(cs, nav_repo):
    """A .pyi stands for the module it declares: the calls of the implementation are its callers too
    (as a language server counts them), while the implementation's own callers stay its own."""
    (nav_repo / "store" / "cache.pyi").write_text("class LRUCache:\n    def evict(self) -> None: ...\n")
    cs.index(embed=False)
    assert [s.line for s in cs.callers("store/cache.pyi:2").sites] == [16]
    assert [s.line for s in cs.callers("store/cache.py:18").sites] == [16]


def test_vendored_and_minified_code_gets_no_symbols(cs, nav_repo):
    (nav_repo / "vendor").mkdir()
    (nav_repo / "vendor" / "lib.py").write_text("def evict():\n    return 1\n")
    (nav_repo / "web" / "bundle.min.js").write_text("function evict(){return 1}evict();\n")
    cs.index(embed=False)
    assert {c.path for c in cs.definitions("evict").candidates} == {"store/cache.py"}


def test_a_name_is_found_whatever_its_characters_and_only_in_its_own_case(cs, nav_repo):
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
    assert not cs.store.conn.execute("SELECT rowid FROM sym_names WHERE sym_names MATCH ?",
                                     ('"x' + "valid?".encode().hex() + '"',)).fetchall()


def test_hostile_shapes_are_indexed_whole_or_said_cut(nav_repo, settings):
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
        assert sorted((s.path, s.line) for s in engine.references("v20000").sites) == [("chain.lua", 2), ("chain.py", 4)]
        assert [(s.path, s.line, s.kind) for s in engine.callers("f").sites] == [("deep.lua", 1, "call")]
    finally:
        engine.close()


def test_a_name_with_a_newline_is_one_name_that_is_not_defined(cs):
    """Issue 66 item 22: ``refs $'a\\nb'`` raised "fts5: phrase queries are not supported"."""
    for follow in (cs.references, cs.callers, cs.definitions):
        nav = follow("evict\nput")
        assert nav.resolution == "not defined here" and not nav.sites
