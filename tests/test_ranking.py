"""The hybrid ranking stack: query routing, symbol definitions first, penalties for tests and docs,
one result per definition; and the plain-RRF switch that reproduces the starting point."""

import pytest

from codesight_tui import CodeSight
from codesight_tui.core.ranking import analyze, definitions, is_code_like

RETRY = '''"""Retry policies for uploads."""


class RetryPolicy:
    """How often and how long to retry a failed upload."""

    def __init__(self, attempts=3, backoff=2.0):
        self.attempts = attempts
        self.backoff = backoff

    def delays(self):
        return [self.backoff ** i for i in range(self.attempts)]


def retry_policy_from_env(env):
    return RetryPolicy(int(env.get("RETRIES", 3)))
'''

TESTS = '''from uploads.retry import RetryPolicy


def test_retry_policy_default_attempts():
    assert RetryPolicy().attempts == 3  # RetryPolicy RetryPolicy retry policy


def test_retry_policy_delays():
    assert RetryPolicy(2, 2.0).delays() == [1.0, 2.0]  # RetryPolicy retry policy delays
'''

DOCS = "# Retrying\n\nThe RetryPolicy class decides how often a failed upload is retried. RetryPolicy!\n"

LONG = "def build_report(rows):\n" + "".join(
    f"    total_{i} = sum(r.amount_{i} for r in rows)  # report total column {i} of the quarterly ledger\n"
    for i in range(120)) + "    return locals()\n"


JS = "export class UploadClient {\n  constructor(url) {\n" + "".join(
    f"    this.option{i} = url + '/endpoint/{i}';  // configure the upload endpoint number {i}\n" for i in range(30)
) + "  }\n\n  retryUpload(file) {\n" + "".join(
    f"    const attempt{i} = send(file, {i});  // try sending the file again, attempt {i}\n" for i in range(30)
) + "  }\n}\n"


@pytest.fixture
def repo2(tmp_path):
    root = tmp_path / "r"
    for rel, text in {"uploads/retry.py": RETRY, "tests/test_retry.py": TESTS, "docs/retrying.md": DOCS,
                      "uploads/report.py": LONG, "web/client.js": JS}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def cs(repo2, settings, hash_embedder):
    c = CodeSight(repo2, settings=settings, embedder=hash_embedder)
    c.index()
    return c


def test_query_kinds():
    assert analyze("RetryPolicy").kind == "symbol" and analyze("RetryPolicy").identifiers == ["RetryPolicy"]
    assert analyze("slugify").kind == "symbol"
    assert analyze("Client.send").identifiers == ["Client.send"]
    q = analyze("where do we use retry_policy_from_env")
    assert q.kind == "mixed" and q.identifiers == ["retry_policy_from_env"]
    q = analyze("How does the upload get retried")
    assert q.kind == "natural" and not q.identifiers and {"upload", "retried"} <= q.words
    assert is_code_like("parseConfigFile") and is_code_like("MAX_SIZE") and not is_code_like("How")


def test_definitions_in_every_spelling(cs):
    rows = cs.store.get_chunks(definitions(cs.store, "RetryPolicy"))
    (r,) = rows.values()
    assert r.path == "uploads/retry.py" and r.start_line <= 4 <= r.end_line  # `class RetryPolicy:` is line 4
    assert definitions(cs.store, "retrypolicy") == definitions(cs.store, "RetryPolicy")  # case-folded fallback
    (d,) = cs.store.get_chunks(definitions(cs.store, "UploadClient.retryUpload")).values()
    assert d.path == "web/client.js"
    assert definitions(cs.store, "Nope.retryUpload") == [] and definitions(cs.store, "") == []


@pytest.mark.parametrize("query", ["RetryPolicy", "retry_policy_from_env", "RetryPolicy delays"])
def test_the_definition_comes_first(cs, query):
    top = cs.search(query, top_k=5)[0]
    assert top.path == "uploads/retry.py" and top.definition


def test_tests_and_docs_rank_below_source_unless_asked_for(cs):
    paths = [h.path for h in cs.search("retry policy", top_k=10)]
    assert paths.index("uploads/retry.py") < paths.index("tests/test_retry.py")
    assert paths.index("uploads/retry.py") < paths.index("docs/retrying.md")
    assert cs.search("tests for the retry policy", top_k=3)[0].path == "tests/test_retry.py"


def test_one_long_definition_is_one_result(cs):
    assert cs.store.conn.execute("SELECT count(*) FROM chunks WHERE path='uploads/report.py'").fetchone()[0] >= 3
    hits = [h for h in cs.search("quarterly ledger report total column", top_k=10) if h.path == "uploads/report.py"]
    assert len(hits) == 1
    h = hits[0]
    assert h.end_line - h.start_line + 1 == len(h.content.split("\n"))
    lines = LONG.split("\n")
    assert h.content.split("\n") == lines[h.start_line - 1 : h.end_line]


def test_plain_rrf_is_the_formula(repo2, settings, hash_embedder):
    c = CodeSight(repo2, settings=settings.model_copy(update={"ranking": "plain"}), embedder=hash_embedder)
    c.index()
    for h in c.search("retry policy delays", top_k=5):
        expect = sum(1 / (c.settings.rrf_k + r) for r in (h.bm25_rank, h.vector_rank) if r)
        assert h.score == pytest.approx(expect, rel=1e-4) and not h.definition


IMPL = """export class UploadClient {
  // Send the file again after a failed upload, waiting longer between attempts.
  async retryUpload(file) {
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (await this.send(file)) return;
      await sleep(this.backoff * 2 ** attempt);
    }
  }
}
"""

DTS = """export declare class UploadClient {
  /** Send the file again after a failed upload, with backoff between attempts. */
  retryUpload(file: File): Promise<void>;
}

/** Options for retrying a failed upload. */
export interface RetryOptions {
  attempts: number;
}
"""


def test_declarations_rank_below_their_implementation_unless_named(tmp_path, settings, hash_embedder):
    from codesight_tui.core.paths import DECLARATIONS, SOURCE, classify

    assert classify("typings/index.d.ts") == DECLARATIONS == classify("pkg/mod.pyi") and classify("lib/a.ts") == SOURCE
    root = tmp_path / "r"
    for rel, text in {"lib/client.js": IMPL, "typings/index.d.ts": DTS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    c = CodeSight(root, settings=settings, embedder=hash_embedder)
    c.index()
    # The declaration matches the words better (BM25 ranks it first, and vectors find it too),
    # yet the implementation is what a reader wants.
    hits = c.search("send the file again after a failed upload", top_k=5)
    assert [h.path for h in hits] == ["lib/client.js", "typings/index.d.ts"]
    assert hits[1].bm25_rank == 1 and hits[1].vector_rank is not None
    top = c.search("RetryOptions", top_k=3)[0]  # declared only in the .d.ts: still first
    assert top.path == "typings/index.d.ts" and top.definition
    assert c.search("typings for a failed upload", top_k=3)[0].path == "typings/index.d.ts"


# --- step 6: feedback from the top hit --------------------------------------------------------

def _unit(*xs):
    import numpy as np

    v = np.zeros(8, dtype=np.float32)
    for i, w in xs:
        v[i] = w
    return v / np.linalg.norm(v)


def test_feedback_ranking_moves_the_query_toward_the_top_hit():
    from codesight_tui.core.ranking import feedback_ranking

    q = _unit((0, 1))
    vecs = {1: _unit((1, 1)), 2: _unit((2, 1)), 3: _unit((1, 1), (3, 0.2)), 4: _unit((0, 1), (2, 1.5))}
    # Alone, the query is as far from 1 and 3 as from 2; moved toward hit 1, it prefers 1 and 3.
    assert feedback_ranking(q, 1, [1, 2, 3, 4, 5], vecs, depth=10) == [1, 3, 4, 2]  # 5 has no vector
    assert feedback_ranking(q, 1, [1, 2, 3, 4], vecs, depth=2) == [1, 3]
    assert feedback_ranking(q, 5, [5, 1, 2], vecs, depth=10) == []  # the top hit has no vector yet


def test_feedback_lifts_a_lexical_hit_like_the_top_hit(cs):
    from codesight_tui.core.ranking import rerank

    ids = [i for (i,) in cs.store.conn.execute(
        "SELECT id FROM chunks WHERE path IN ('uploads/retry.py', 'uploads/report.py', 'web/client.js') ORDER BY id")]
    a, b, c, d, e = ids[:5]
    rankings = {"bm25": [a, b, c], "vector": [a, d, e]}
    vecs = {a: _unit((1, 1)), b: _unit((2, 1)), c: _unit((1, 1), (3, 0.1)), d: _unit((0, 1)), e: _unit((4, 1))}
    asked: list[list[int]] = []

    def vectors_for(rows):
        asked.append(sorted(r.id for r in rows))
        return {r.id: vecs[r.id] for r in rows}

    query = "zzyzx qwvp"  # words no path holds: fusion and feedback alone decide
    plain = [cid for cid, *_ in rerank(cs.store, rankings, query)]
    assert plain.index(b) < plain.index(c)  # BM25 ranked b above c, and no vector ranked either
    out = rerank(cs.store, rankings, query, query_vector=_unit((0, 1)), vectors_for=vectors_for)
    order = [cid for cid, *_ in out]
    assert order[0] == a and order.index(c) < order.index(b)  # c is like the top hit; b is not
    assert asked == [sorted(ids[:5])]  # one lookup, for every candidate
    assert {cid: r for cid, _, r, _ in out}[c] == {"bm25": 3}  # ranks shown are the retrievers' own


def test_search_reads_feedback_vectors_from_the_cache(cs, monkeypatch):
    from codesight_tui.core.vectors import VectorStore

    expect = [h.chunk_id for h in cs.search("retry a failed upload", top_k=5)]
    monkeypatch.setattr(VectorStore, "vectors", lambda self, ids: pytest.fail("LanceDB lookup with a warm cache"))
    assert [h.chunk_id for h in cs.search("retry a failed upload", top_k=5)] == expect
    monkeypatch.undo()
    for p in cs.settings.cache_dir.glob("*.sqlite"):  # the cache is gone: LanceDB has every vector
        p.unlink()
    other = CodeSight(cs.root, settings=cs.settings, embedder=cs._embedder)
    assert [h.chunk_id for h in other.search("retry a failed upload", top_k=5)] == expect
