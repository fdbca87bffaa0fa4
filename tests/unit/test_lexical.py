"""BM25 from memory (core.lexical) against SQLite FTS5's own bm25(), on a real index."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from properties import examples

import codesight_tui
from codesight_tui import CodeSight
from codesight_tui.core.store import lexical
from codesight_tui.core.store.lexical import ResidentBM25, _varints
from codesight_tui.core.store.store import BM25_WEIGHTS
from codesight_tui.core.text import fts_query, query_terms

QUERIES = [
    "parse the query string",
    "retry a failed operation",
    "hash a password with a salt",
    "search",
    "Running runs ran",
    "CAFÉ naïve résumé",
    "the of and",
    "zzqqxxnonexistentword",
    "SearchResult",
    "static tier vectors coverage",
    "lock writer index busy",
    "json",
    "socket permission peer",
    "def search(self, query",
    "keep_resident",
    "self.store.keep_resident()",
    "a_b a b",
]

WORDS = [
    "index",
    "search",
    "query",
    "vector",
    "static",
    "model",
    "chunk",
    "path",
    "lock",
    "store",
    "socket",
    "file",
    "line",
    "token",
    "score",
    "rank",
    "write",
    "read",
    "build",
    "error",
    "notice",
    "status",
    "watch",
    "repository",
    "cache",
    "embed",
    "parse",
    "ranking",
    "fusion",
    "depth",
    "ids",
    "rows",
    "terms",
    "the",
    "a",
    "of",
    "to",
    "in",
    "for",
    "with",
    "keep_resident",
    "fts_query",
    "get_meta",
    "search_many",
    "static_index",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> CodeSight:
    """An index of real code: this package's own source, a few hundred chunks."""
    root = tmp_path_factory.mktemp("lexical") / "repo"
    shutil.copytree(Path(codesight_tui.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notes.md").write_text("Café naïve résumé: accents fold as FTS5's remove_diacritics 2 does.\n")
    # module-scoped, so set up before the autouse isolation: its directories are named here
    home = tmp_path_factory.mktemp("lexical-home")
    cs = CodeSight(root, data_dir=home / "data", cache_dir=home / "cache", static_model="off")
    cs.index(embed=False)
    return cs


def fts5_scores(cs: CodeSight, query: str) -> dict[int, float]:
    w = ", ".join(str(x) for x in BM25_WEIGHTS)
    match = fts_query(query)
    if match is None:
        return {}
    return dict(
        cs.store.conn.execute(
            f"SELECT rowid, -bm25(chunks_fts, {w}) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
        ).fetchall()
    )


def resident(cs: CodeSight) -> ResidentBM25:
    r = ResidentBM25(
        cs.store.db_path,
        "chunks_fts",
        ["path", "scope", "content", "terms"],
        BM25_WEIGHTS,
        "porter unicode61 remove_diacritics 2",
    )
    r.build()
    assert r.postings is not None
    return r


def assert_same_ranking(cs: CodeSight, r: ResidentBM25, query: str, limit: int = 1000) -> None:
    found = r.bm25(cs.store.conn, query_terms(query)[:64], limit)
    assert found is not None, query
    scores = fts5_scores(cs, query)
    expected = sorted(scores, key=lambda i: (-scores[i], i))[:limit]
    # The same rows in the same order, except that rows whose scores tie (to float rounding: the
    # sums run in another order) may come in either order.
    assert _differ_only_in_ties(found, expected, scores), query
    # and FTS5's own ORDER BY ... LIMIT agrees, ties at the cut apart
    fts = cs.store.bm25(query, limit)
    assert [round(scores[i], 9) for i in fts] == [round(scores[i], 9) for i in found], query


def _differ_only_in_ties(found: list[int], expected: list[int], scores: dict[int, float]) -> bool:
    """Whether two rankings list the same scores in order, and the same rows for each score but
    the last (a tie at the cut may keep either row)."""
    key = [round(scores[i], 9) for i in found]
    if key != [round(scores[i], 9) for i in expected]:
        return False
    cut = key[-1] if key else 0.0
    return all(
        {i for i in found if round(scores[i], 9) == v} == {i for i in expected if round(scores[i], 9) == v}
        for v in set(key) - {cut}
    )


def test_varints_read_sqlite_big_endian_groups() -> None:
    assert _varints(bytes([0x05, 0x81, 0x00, 0xFF, 0x7F])) == [5, 128, 0x3FFF]
    assert _varints(bytes([0x81] * 8 + [0x01])) == [(sum(1 << (7 * k) for k in range(1, 9)) << 1) | 1]


@pytest.mark.parametrize("query", QUERIES)
def test_memory_ranks_every_row_as_fts5_does(engine: CodeSight, query: str) -> None:
    assert_same_ranking(engine, resident(engine), query)


def test_memory_answers_the_first_rows_as_fts5s_limit(engine: CodeSight) -> None:
    r = resident(engine)
    for query in QUERIES:
        found = r.bm25(engine.store.conn, query_terms(query)[:64], 10)
        scores = fts5_scores(engine, query)
        assert found == sorted(scores, key=lambda i: (-scores[i], i))[:10], query


_RESIDENT: dict[int, ResidentBM25] = {}


def _shared(cs: CodeSight) -> ResidentBM25:
    if id(cs) not in _RESIDENT:
        _RESIDENT[id(cs)] = resident(cs)
    return _RESIDENT[id(cs)]


@hsettings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=7))
def test_any_mix_of_words_ranks_as_fts5(engine: CodeSight, words: list[str]) -> None:
    assert_same_ranking(engine, _shared(engine), " ".join(words))


@pytest.mark.parametrize(
    "query",
    [
        "get_or_create",
        "keep_resident bm25",
        "fts_query query_terms",
        "static_model off",
        "path_match glob",
        "x_y_z_nowhere",
        "resident_bm25 True",
    ],
)
def test_a_phrase_ranks_as_fts5s(engine: CodeSight, query: str) -> None:
    # get_or_create: FTS5 reads the quoted term as the phrase "get or create", matched by positions
    assert any(len(t) > 1 for t in _shared(engine).tokens(query_terms(query)[:64]))
    assert_same_ranking(engine, _shared(engine), query)


def test_a_copy_older_than_the_index_is_not_used_and_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 'first'\n")
    cs = CodeSight(root, resident_bm25=True)
    cs.index(embed=False)
    assert [h.path for h in cs.search("alpha", mode="bm25")] == ["a.py"]
    r = cs.store.resident
    assert r is not None
    r.wait(30)
    assert r.builds == 1 and r.bm25(cs.store.conn, ["alpha"], 10) is not None
    (root / "b.py").write_text("def zebracorn():\n    return 'second'\n")
    cs.index(embed=False)
    # the FTS index changed: the copy says nothing, FTS5 answers (the new file is found at once) ...
    assert r.bm25(cs.store.conn, ["zebracorn"], 10) is None
    assert [h.path for h in cs.search("zebracorn", mode="bm25")] == ["b.py"]
    r.wait(30)
    assert r.builds == 1  # ... and the copy is read again only once the index has been quiet a while
    assert r._stale is not None
    r._stale = (r._stale[0], r._stale[1] - lexical.QUIET)
    assert r.bm25(cs.store.conn, ["zebracorn"], 10) is None
    r.wait(30)
    assert r.builds == 2
    assert r.bm25(cs.store.conn, ["zebracorn"], 10) == [
        i for (i,) in cs.store.conn.execute("SELECT id FROM chunks WHERE path = 'b.py'")
    ]
    cs.close()


def test_the_engine_answers_the_same_with_bm25_from_memory(engine: CodeSight, tmp_path: Path) -> None:
    before = {q: [(h.path, h.start_line) for h in engine.search(q, mode="bm25")] for q in QUERIES}
    twin = CodeSight(engine.root, settings=engine.settings, resident_bm25=True)
    twin.search("warm up", mode="bm25")
    resident = twin.store.resident
    assert resident is not None
    resident.wait(30)
    assert resident.postings is not None
    for q, hits in before.items():
        assert [(h.path, h.start_line) for h in twin.search(q, mode="bm25")] == hits, q
    # filters stay with FTS5, and agree
    assert [h.path for h in twin.search("search", mode="bm25", glob="core/*")] == [
        h.path for h in engine.search("search", mode="bm25", glob="core/*")
    ]
    twin.close()


def test_an_index_over_the_limit_stays_with_fts5(engine: CodeSight) -> None:
    r = ResidentBM25(
        engine.store.db_path,
        "chunks_fts",
        ["path", "scope", "content", "terms"],
        BM25_WEIGHTS,
        "porter unicode61 remove_diacritics 2",
        max_rows=10,
    )
    r.build()
    assert r.postings is None
    assert r.bm25(engine.store.conn, ["search"], 10) is None  # and no second read at the same key
    assert not (r._building and r._building.is_alive())


def test_a_copy_that_cannot_be_read_is_not_tried_at_every_query(tmp_path: Path) -> None:
    r = ResidentBM25(
        tmp_path / "missing" / "index.db",
        "chunks_fts",
        ["path", "scope", "content", "terms"],
        BM25_WEIGHTS,
        "porter unicode61 remove_diacritics 2",
    )
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE chunks_fts_data (id INTEGER PRIMARY KEY, block BLOB)")
    conn.execute("INSERT INTO chunks_fts_data VALUES (10, x'0102')")
    assert r.bm25(conn, ["anything"], 10) is None
    r.wait(30)
    assert r.failed_key == b"\x01\x02" and r.postings is None
    assert r.bm25(conn, ["anything"], 10) is None
    assert r._building is not None and not r._building.is_alive()  # no second read was started
    before = r._building
    r.bm25(conn, ["anything"], 10)
    assert r._building is before
