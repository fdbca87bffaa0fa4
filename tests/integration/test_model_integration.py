"""Integration tests with the real bundled all-MiniLM-L6-v2 (no network)."""

from pathlib import Path

import pytest

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.index.embedder import SentenceTransformerEmbedder
from codesight_tui.core.text import query_terms

pytestmark = pytest.mark.model

PARAPHRASE = "great circle distance between two places on the globe"


def test_bundled_model_loads_offline(real_embedder: SentenceTransformerEmbedder) -> None:
    assert real_embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert real_embedder.dim == 384 and real_embedder.device == "cpu"
    v = real_embedder.encode(["def add(a, b): return a + b"])
    assert v.shape == (1, 384)
    assert abs(float((v[0] ** 2).sum()) - 1.0) < 1e-4  # normalised


def test_paraphrase_found_by_vectors_not_bm25(
    repo: Path, settings: Settings, real_embedder: SentenceTransformerEmbedder
) -> None:
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


def test_semantic_queries_rank_the_right_function_first(
    repo: Path, settings: Settings, real_embedder: SentenceTransformerEmbedder
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=real_embedder)
    cs.index()
    hits = cs.search("check whether a login credential matches the stored one", top_k=3)
    assert hits[0].path == "src/auth.py" and "verify_password" in hits[0].scope
    assert cs.search("try sending the file again after waiting", top_k=3)[0].path == "web/client.js"


def test_codesight_default_loads_bundled_model(repo: Path, settings: Settings) -> None:
    cs = CodeSight(repo, settings=settings)  # no injected embedder: the configured default
    report = cs.index()
    assert report.vectors_pending == 0 and report.embedded == report.chunks
    assert cs.status(check_disk=False)["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert cs.search(PARAPHRASE, top_k=1)[0].path == "src/geo.py"


@pytest.mark.model
def test_model_in_a_child_process(
    real_embedder: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TUI's embedder: same vectors as in-process, never imports torch here, ends at once,
    and is not fooled by a `codesight_tui/` folder in the current directory."""
    import numpy as np

    from codesight_tui.core.errors import CodeSightError
    from codesight_tui.core.index.embedder import ProcessEmbedder
    from codesight_tui.core.ingest.tokens import resolve_model

    decoy = tmp_path / "codesight_tui"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('decoy imported')\n")
    monkeypatch.chdir(tmp_path)
    from codesight_tui.core.config import DEFAULT_MODEL

    emb = ProcessEmbedder(resolve_model(DEFAULT_MODEL), device="cpu")
    try:
        texts = ["def haversine(lat1, lon1, lat2, lon2): ...", "class ConfigLoader: reads settings"]
        here, there = real_embedder.encode(texts), emb.encode(texts)
        assert there.shape == (2, real_embedder.dim) and there.dtype == np.float32
        assert float(np.min(np.sum(here * there, axis=1))) > 0.9999
        assert np.allclose(
            emb.encode_query("great circle distance"), real_embedder.encode_query("great circle distance"), atol=1e-4
        )
        assert emb.encode([]).shape == (0, real_embedder.dim)
    finally:
        emb.close()
    with pytest.raises(CodeSightError, match="stopped"):
        emb.encode(["after close"])
    with pytest.raises(CodeSightError, match="cannot load embedding model"):
        ProcessEmbedder(resolve_model(str(tmp_path / "no-such-model")))


def test_gpu_path_gives_the_same_vectors_as_sentence_transformers(
    real_embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlapped path (threads tokenise ahead of the model; taken on CUDA) computes exactly
    what ``SentenceTransformer.encode`` does, here on the CPU: same tokens, same pooling, same
    normalisation, results back in input order, odd texts included."""
    import numpy as np

    texts = [f"src/m{i}.py\ndef handler_{i}(request):\n" + "    x = x + 1\n" * (i * 7 % 60) for i in range(40)]
    texts += ["", "x", "naïve café — 日本語\ttab", "\x00 nul", "word " * 3000]
    ref = real_embedder.model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    monkeypatch.setattr(real_embedder, "overlap", True)
    monkeypatch.setattr(real_embedder, "batch_size", 8)
    got = real_embedder.encode(texts)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert float((got * ref).sum(1).min()) > 0.99999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    few = real_embedder.encode(texts[:3])  # a query-sized call tokenises in the calling thread
    assert float((few * ref[:3]).sum(1).min()) > 0.99999


def test_gpu_path_only_where_it_matches_encode(
    real_embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A default prompt (which encode would prepend) or a tokenizer file that can't be read keeps
    sentence-transformers' own encode; MiniLM qualifies."""
    assert real_embedder._overlap_safe()
    monkeypatch.setattr(real_embedder.model, "default_prompt_name", "query", raising=False)
    assert not real_embedder._overlap_safe()
    monkeypatch.setattr(real_embedder.model, "default_prompt_name", None, raising=False)
    monkeypatch.setattr(real_embedder, "_tok_local", __import__("threading").local())
    monkeypatch.setattr(real_embedder, "tokenizer_file", "/nonexistent/tokenizer.json")
    assert not real_embedder._overlap_safe()


def test_doc_view_brings_a_described_function_closer(
    repo: Path, settings: Settings, real_embedder: SentenceTransformerEmbedder
) -> None:
    """The real model, on a function whose docstring says what its code hides: its doc view is
    nearer to a question about it than its full text is, and search ranks it by the doc view."""
    import numpy as np

    (repo / "src" / "indent.py").write_text(
        "import re\nfrom functools import reduce\nfrom math import gcd\n\n\n"
        "def detect_indentation(plain: str) -> int:\n"
        '    """Auto-detect the indentation of code.\n\n    Returns:\n        int: Number of spaces used to indent code.\n    """\n'
        "    found = {len(m.group(1)) for m in re.finditer(r'^( *)(.*)$', plain, flags=re.MULTILINE)}\n"
        "    try:\n        return reduce(gcd, [i for i in found if not i % 2]) or 1\n"
        "    except TypeError:\n        return 1\n"
    )
    cs = CodeSight(repo, settings=settings, embedder=real_embedder)
    cs.index()
    query = "guess how many spaces a snippet uses for each nesting level"
    hit = cs.search(query, mode="vector", top_k=1)[0]
    assert hit.path == "src/indent.py" and "detect_indentation" in hit.scope
    table = cs.storage.vectors.table().to_arrow()
    vec = dict(zip(table.column("id").to_pylist(), table.column("vector").to_pylist(), strict=False))
    q = real_embedder.encode_query(query)
    doc_d, text_d = (1 - float(np.dot(q, vec[i])) for i in (-hit.chunk_id, hit.chunk_id))
    assert doc_d < text_d
    nearest = cs.storage.vectors.nearest(q, 1)[0]
    assert nearest[0] == hit.chunk_id and nearest[1] == pytest.approx(doc_d, abs=1e-4)


@pytest.mark.parametrize("query", ["!!! ???", "()[]{}", "zzkq vvbx plorf", "purple elephant banana"])
def test_nonsense_gets_no_results_not_nearest_neighbours(
    repo: Path, settings: Settings, real_embedder: SentenceTransformerEmbedder, query: str
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=real_embedder)
    cs.index()
    assert cs.search(query, mode="hybrid") == []
    # A real question that shares no word with the code still gets its answer.
    assert cs.search(PARAPHRASE, mode="hybrid", top_k=1)[0].path == "src/geo.py"


def test_a_reclone_gets_its_vectors_from_the_cache_without_loading_the_model(
    repo: Path, settings: Settings, tmp_path: Path
) -> None:
    """The shared cache holds the first clone's text: the second clone's index run writes every
    vector from it, and neither torch nor the model is loaded (a fresh process, the real model)."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    cs = CodeSight(repo, settings=settings)  # the engine's own model and tokenizer, as a user has them
    first = cs.index()
    assert first.embedded and not first.vectors_pending
    cs.close()
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone, symlinks=True)
    code = (
        "import json, sys\nfrom codesight_tui import CodeSight\n"
        f"r = CodeSight({str(clone)!r}).index()\n"
        "print(json.dumps({'embedded': r.embedded, 'hits': r.cache_hits, 'pending': r.vectors_pending,"
        " 'chunks': r.chunks, 'torch': 'torch' in sys.modules}))"
    )
    env = {**os.environ, "CODESIGHT_DATA_DIR": str(settings.data_dir), "CODESIGHT_CACHE_DIR": str(settings.cache_dir)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r == {"embedded": 0, "hits": r["chunks"], "pending": 0, "chunks": first.chunks, "torch": False}, out.stderr
    clone_cs = CodeSight(clone, settings=settings)
    assert clone_cs.search(PARAPHRASE, mode="vector", top_k=1)[0].path == "src/geo.py"  # real vectors
    clone_cs.close()
    (clone / "src" / "extra.py").write_text("def brand_new_function_for_the_model():\n    return 42\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["embedded"] >= 1 and r["pending"] == 0 and r["torch"] is True  # new text: the model runs
