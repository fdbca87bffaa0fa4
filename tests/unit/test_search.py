from pathlib import Path

import pytest
from conftest import HashEmbedder
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from properties import examples

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.fusion import rrf_fuse
from codesight_tui.core.modes import Mode


@pytest.fixture
def cs(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> CodeSight:
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    return c


def test_rrf_matches_the_formula_and_keeps_provenance() -> None:
    fused = rrf_fuse({"bm25": [1, 2, 3], "vector": [3, 4]}, k=60)
    scores = {cid: s for cid, s, _ in fused}
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[1] == pytest.approx(1 / 61)
    assert fused[0][0] == 3 and fused[0][2] == {"bm25": 3, "vector": 1}
    assert [c for c, _, _ in fused][1] == 1  # ties broken by the best single rank (1 beats 4)


@pytest.mark.parametrize("query", ["parseConfigFile", "parse_config_file", "parse config file"])
def test_identifier_styles_find_each_other(cs: CodeSight, query: str) -> None:
    hits = cs.search(query, mode="bm25", top_k=5)
    paths = {h.path for h in hits}
    assert {"src/config_loader.py", "web/client.js"} <= paths


def test_results_carry_location_scope_and_provenance(cs: CodeSight) -> None:
    hits = cs.search("verify password digest", top_k=5)
    top = hits[0]
    assert top.path == "src/auth.py" and top.start_line >= 1 and top.end_line >= top.start_line
    assert "password" in top.scope and top.language == "python"
    assert top.bm25_rank == 1 and top.vector_rank is not None and top.found_by == "both"
    assert top.score > 0


def test_modes_use_only_their_retriever(cs: CodeSight) -> None:
    assert all(h.vector_rank is None for h in cs.search("server port", mode="bm25"))
    assert all(h.bm25_rank is None for h in cs.search("server port", mode="vector"))
    with pytest.raises(CodeSightError):
        cs.search("x", mode="fuzzy")  # what a user may type


def test_filters_by_glob_and_language(cs: CodeSight) -> None:
    assert {h.path for h in cs.search("config", glob="web/", top_k=20)} == {"web/client.js"}
    assert all(h.path.endswith(".py") for h in cs.search("config", glob="*.py", top_k=20))
    assert all(h.language == "go" for h in cs.search("start server", language="go", top_k=20))
    assert all(h.language == "go" for h in cs.search("start server", mode="vector", language="go", top_k=20))
    assert cs.search("config", glob="nothing/here/") == []


ODD = [
    '"',
    '""',
    "'",
    "*",
    "-",
    "--",
    ":",
    "NEAR",
    "AND",
    "OR NOT",
    "(",
    ")",
    "a AND (b OR",
    "col:val",
    "NEAR(a b, 2)",
    "^start",
    "ünïcödé 検索",
    "🙂",
    "\x00",
    "\\",
    "{}[]",
    "   ",
    "",
    "SELECT * FROM chunks;--",
]


@pytest.mark.parametrize("query", ODD)
@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
def test_odd_queries_never_raise(cs: CodeSight, query: str, mode: Mode) -> None:
    assert isinstance(cs.search(query, mode=mode), list)


@given(st.text(max_size=80))
@hsettings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_query_string_is_safe(cs: CodeSight, q: str) -> None:
    assert isinstance(cs.search(q, mode="hybrid"), list)


def test_empty_query_and_no_index(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    assert cs.search("anything") == []  # nothing indexed yet: empty, not an error
    cs.index()
    assert cs.search("") == [] and cs.search("   ") == []


def test_search_works_before_vectors_exist(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index(embed=False)
    assert cs.store.counts()["vectors"] == 0
    hits = cs.search("haversine")  # hybrid on a lexical-only index degrades to BM25
    assert hits and hits[0].path == "src/geo.py" and hits[0].vector_rank is None


def test_each_hit_says_which_line_to_open(tmp_path: Path, settings: Settings) -> None:
    # Issue 20, item 1: a definition opens at its own line, under decorators and comments; any
    # other hit at its first line holding a query word.
    from codesight_tui import CodeSight

    root = tmp_path / "r"
    root.mkdir()
    (root / "widgets.py").write_text(
        "import functools\n\n\n# Frobnicate every widget in the tray.\n# Slow on big trays.\n"
        "@functools.lru_cache\n@other.decorator(frobnicate_the_widgets=1)\ndef frobnicate_the_widgets(tray):\n"
        "    count = 0\n    for w in tray:\n        count += w.spin()\n    return count\n"
    )
    c = CodeSight(root, settings=settings)
    c.index(embed=False)
    (hit,) = c.search("frobnicate_the_widgets", mode="bm25", top_k=1)
    assert hit.definition and hit.start_line < 8 and hit.line == 8
    (hit,) = c.search("spin the widgets in a tray", mode="bm25", top_k=1)
    assert hit.line == hit.start_line + next(
        k for k, ln in enumerate(hit.content.split("\n")) if "widget" in ln.lower()
    )
    assert hit.to_dict()["line"] == hit.line


def test_one_long_definition_is_one_result() -> None:
    # Issue 20, item 4: flask's Flask.url_for came back three times in a top 5, as windows 966-988,
    # 1018-1064 and 1084-1090 that do not touch. A definition is listed once, at its best window.
    from codesight_tui.core.search.contract import SearchResult
    from codesight_tui.core.search.searcher import merge_into
    from codesight_tui.core.store.store import ChunkRow

    def hit(
        start: int, end: int, scope: str = "class Flask > def url_for", path: str = "src/flask/app.py"
    ) -> SearchResult:
        return SearchResult(path, start, end, scope, "python", 1.0, 1, 1, "x\n" * (end - start) + "x", 1)

    def row(start: int, end: int, scope: str = "class Flask > def url_for", path: str = "src/flask/app.py") -> ChunkRow:
        return ChunkRow(0, path, start, end, "python", scope, "y\n" * (end - start) + "y")

    results = [hit(966, 988)]
    assert merge_into(results, row(1018, 1064)) and merge_into(results, row(1084, 1090))
    assert [(r.start_line, r.end_line) for r in results] == [(966, 988)]
    assert merge_into(results, row(989, 1000))  # a touching window still extends it
    assert [(r.start_line, r.end_line) for r in results] == [(966, 1000)]
    # other definitions, other files and merged small definitions stay separate results
    assert not merge_into(results, row(1200, 1210, "class Flask > def url_map"))
    assert not merge_into(results, row(1018, 1064, path="src/flask/helpers.py"))
    assert not merge_into([hit(1, 9, "def a, def b")], row(30, 39, "def a, def b"))


@pytest.mark.parametrize("query", ["!!!", "...", "()", "-> =>", "{}[]", "¿?"])
def test_punctuation_only_queries_have_no_results(cs: CodeSight, query: str) -> None:
    # Issue 20, item 13: not arbitrary vector neighbours
    for mode in ("hybrid", "bm25", "vector"):
        assert cs.search(query, mode=mode) == []


def test_result_names_drop_the_keywords() -> None:
    from codesight_tui.core.search.contract import short_scope

    assert short_scope("class Flask > def url_for") == "Flask.url_for"
    assert (
        short_scope("class SecureCookieSessionInterface > def open_session")
        == "SecureCookieSessionInterface.open_session"
    )
    assert short_scope("impl Display for Foo > fn fmt") == "Display for Foo.fmt"
    assert short_scope("") == ""


def test_vector_mode_lists_one_definition_once(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    """Issue 48 item 25: a long function cut into several windows is one result in vector mode,
    as in hybrid mode (it was six rows of resizeWindows on fzf)."""
    body = "".join(f"    window_height_{i} = resize_window(pane, rows={i}, cols={i * 2})\n" for i in range(160))
    (repo / "src" / "layout.py").write_text(f"def resize_windows(pane):\n{body}    return pane\n")
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    windows = c.store.conn.execute("SELECT count(*) FROM chunks WHERE path = 'src/layout.py'").fetchone()[0]
    assert windows >= 3
    for mode in ("vector", "hybrid"):
        hits = [h for h in c.search("resize window height pane rows", mode=mode, top_k=10) if h.path == "src/layout.py"]
        assert len(hits) == 1, (mode, [(h.start_line, h.end_line) for h in hits])


def test_a_bad_mode_is_one_usage_error_in_every_layer(tmp_path: Path) -> None:
    """Issue 67 item 4: a bad mode was a ``ValueError`` in the searcher and a ``CodeSightError``
    in the layer above. It is one ``UsageError`` (exit 2) from the searcher up to the CLI."""
    from codesight_tui.core.errors import UsageError
    from codesight_tui.core.modes import checked_mode
    from codesight_tui.core.search import searcher
    from codesight_tui.core.store.store import Store
    from codesight_tui.core.store.vectors import VectorStore

    assert checked_mode("bm25") == "bm25"
    store, vectors = Store(tmp_path / "index.db"), VectorStore(tmp_path / "vectors")
    try:
        with pytest.raises(UsageError, match="unknown mode 'fuzzy': use one of hybrid, bm25, vector") as raised:
            searcher.local_search(store, vectors, None, "parse config", mode="fuzzy")
        assert raised.value.exit_code == 2
    finally:
        store.close()
