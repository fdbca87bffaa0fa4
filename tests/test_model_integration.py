"""Integration tests with the real bundled all-MiniLM-L6-v2 (no network)."""

import pytest

from codesight_tui import CodeSight
from codesight_tui.core.text import query_terms

pytestmark = pytest.mark.model

PARAPHRASE = "great circle distance between two places on the globe"


def test_bundled_model_loads_offline(real_embedder):
    assert real_embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert real_embedder.dim == 384 and real_embedder.device == "cpu"
    v = real_embedder.encode(["def add(a, b): return a + b"])
    assert v.shape == (1, 384)
    assert abs(float((v[0] ** 2).sum()) - 1.0) < 1e-4  # normalised


def test_paraphrase_found_by_vectors_not_bm25(repo, settings, real_embedder):
    cs = CodeSight(repo, settings=settings, embedder=real_embedder)
    cs.index()
    target = (repo / "src" / "geo.py").read_text().lower()
    # The query shares no word with the target function.
    assert not any(t in target for t in query_terms(PARAPHRASE))
    bm25 = cs.search(PARAPHRASE, mode="bm25")
    assert all(h.path != "src/geo.py" for h in bm25)
    vec = cs.search(PARAPHRASE, mode="vector", top_k=3)
    assert vec[0].path == "src/geo.py" and "haversine" in vec[0].scope
    hybrid = cs.search(PARAPHRASE, mode="hybrid", top_k=3)
    assert hybrid[0].path == "src/geo.py" and hybrid[0].vector_rank == 1


def test_semantic_queries_rank_the_right_function_first(repo, settings, real_embedder):
    cs = CodeSight(repo, settings=settings, embedder=real_embedder)
    cs.index()
    hits = cs.search("check whether a login credential matches the stored one", top_k=3)
    assert hits[0].path == "src/auth.py" and "verify_password" in hits[0].scope
    assert cs.search("try sending the file again after waiting", top_k=3)[0].path == "web/client.js"


def test_codesight_default_loads_bundled_model(repo, settings):
    cs = CodeSight(repo, settings=settings)  # no injected embedder: the configured default
    report = cs.index()
    assert report.vectors_pending == 0 and report.embedded == report.chunks
    assert cs.status(check_disk=False)["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert cs.search(PARAPHRASE, top_k=1)[0].path == "src/geo.py"
