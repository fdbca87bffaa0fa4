"""The static tier (issue 18): a model2vec model distilled for real from the bundled MiniLM,
static vectors right after the lexical phase, search from BM25 + static without the full model,
and a CLI that answers without importing torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import HashEmbedder

from codesight_tui.core.config import Settings
from codesight_tui.core.engine import CodeSight
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.index.static import StaticEmbedder, distill, distilled_dir, is_model_dir
from codesight_tui.core.modes import Vectors

GEO_QUERY = "great-circle distance between two places on the globe"


def _consistent(cs: CodeSight) -> bool:
    """Every chunk has a static vector, and every chunk with a doc view has one for it too."""
    from codesight_tui.core.ingest.chunker import doc_text

    c = cs.store.conn
    chunks = {i for (i,) in c.execute("SELECT id FROM chunks")}
    static = {i for (i,) in c.execute("SELECT id FROM static_vectors")}
    docs = {i for (i,) in c.execute("SELECT id FROM static_docs")}
    viewed = {i for i, *row in c.execute("SELECT id, path, scope, content, language FROM chunks") if doc_text(*row)}
    return chunks == static and docs == viewed


def test_distilled_model_is_a_real_static_model(static_model_dir: Path) -> None:
    assert is_model_dir(static_model_dir)
    assert not list(static_model_dir.parent.glob("*.tmp-*"))  # nothing half-written left beside it
    model = StaticEmbedder(static_model_dir)
    assert model.dim == 256 and model.device == "cpu"
    v = model.encode(["def haversine(lat1, lon1, lat2, lon2):", "class ConfigLoader:", ""])
    assert v.shape == (3, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:2], axis=1), 1.0, atol=1e-5)
    q = model.encode_query("distance on a sphere")
    # Related text is nearer than unrelated text: the vectors carry meaning, not noise.
    assert float(v[0] @ q) > float(v[1] @ q)
    # The same vectors as model2vec's own StaticModel (codesight reads the folder itself, to keep
    # huggingface_hub out of a fresh CLI process).
    from model2vec import StaticModel

    ref = StaticModel.from_pretrained(str(static_model_dir), normalize=True)
    texts = [
        "def haversine(lat1, lon1, lat2, lon2):",
        "class ConfigLoader:\n    def reload(self): ...",
        "naïve café ✓",
        "x" * 5000,
        "",
    ]
    assert np.allclose(model.encode(texts), ref.encode(texts, use_multiprocessing=False), atol=2e-3)
    assert np.allclose(model.encode_query("parse a date"), ref.encode(["parse a date"])[0], atol=2e-3)


def test_shipped_model_encodes_as_its_tokenizer_does() -> None:
    """The shipped table's vectors come from token ids that skip the tokenizer for ASCII code
    (``WordPieces``): the same vectors as from the tokenizer's ids, text for text, including text
    the fast path leaves to the tokenizer (accents, CJK, control characters, special tokens)."""
    from codesight_tui.core.index.static import PACKAGED_DIR

    fast = StaticEmbedder(PACKAGED_DIR)
    slow = StaticEmbedder(PACKAGED_DIR)
    slow.words = None  # the tokenizer for every text
    assert fast.words is not None
    code = [p.read_text() for p in sorted(Path(__file__).resolve().parents[2].joinpath("codesight_tui").rglob("*.py"))]
    texts = [t[:3000] for t in code] + [
        "naïve café ✓",
        "日本語 code",
        "a\x00b",
        "tab\tand\x0bvt",
        "[UNK] [pad] x",
        "y" * 300,
        "",
        "   ",
        "x" * 5000,
    ]
    for batch in (texts, texts[:40], texts[-9:], ["def f(x): return x"]):
        assert np.array_equal(fast.encode(batch), slow.encode(batch))
    assert np.array_equal(
        fast.encode_query("where do we retry failed uploads"), slow.encode_query("where do we retry failed uploads")
    )


def test_distill_cancelled_leaves_nothing(tmp_path: Path) -> None:
    from codesight_tui.core.ingest.tokens import resolve_model

    cancel = threading.Event()
    cancel.set()
    dest = tmp_path / "static" / "m"
    with pytest.raises(CodeSightError, match="cancelled"):
        distill(Path(resolve_model("minilm").load_from), dest, cancel=cancel)
    assert not dest.exists() and not list(dest.parent.glob("*.tmp-*"))


def test_distill_bad_base_model_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notamodel").mkdir()
    with pytest.raises(CodeSightError, match="could not distil"):
        distill(tmp_path / "notamodel", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_static_vectors_follow_the_lexical_phase(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    report = cs.index(embed=False, static=True)
    n = cs.counts()["chunks"]
    assert report.static_embedded == n > 0 and not report.warnings
    assert hash_embedder.calls == []  # the full model did nothing
    assert _consistent(cs)

    hits = cs.search(GEO_QUERY, vectors=Vectors.STATIC)
    assert hits.retrievers == ["bm25", "static"]
    assert hits[0].path == "src/geo.py" and hits[0].found_by == "static" and hits[0].static_rank == 1

    # Edits: the chunks of a changed or deleted file take their static vectors with them, and only
    # the new chunks are embedded by the next run.
    (repo / "src" / "geo.py").write_text(
        (repo / "src" / "geo.py").read_text() + "\n\ndef bearing(a, b):\n    return math.atan2(b, a)\n"
    )
    (repo / "server" / "main.go").unlink()
    again = cs.index(embed=False, static=True)
    assert 0 < again.static_embedded < n
    assert _consistent(cs)
    assert not any(h.path == "server/main.go" for h in cs.search("listening port server start", vectors=Vectors.STATIC))


def test_a_docstring_is_searched_beside_its_code(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path
) -> None:
    """A chunk's doc view (its comments and docstrings under its first line) has a static vector
    of its own, and a chunk is as near as the nearer of its two: a question about behaviour meets
    the docstring's words, where the whole chunk's vector is mostly its code's."""
    src = tmp_path / "repo" / "src"
    src.mkdir(parents=True)
    (src / "indent.py").write_text(
        "def detect_indentation(code):\n"
        '    """Guess how many spaces each nesting level of a snippet is indented by."""\n'
        "    widths = [len(ln) - len(ln.lstrip(' ')) for ln in code.splitlines() if ln.strip()]\n"
        "    deltas = sorted({b - a for a, b in zip(widths, widths[1:]) if b > a})\n"
        "    return deltas[0] if deltas else 4\n"
    )
    (src / "other.py").write_text(
        "def parse_config(path):\n    with open(path) as fh:\n        return json.load(fh)\n\n\n"
        "def render_table(rows):\n    return '\\n'.join(' | '.join(map(str, r)) for r in rows)\n"
    )
    cs = CodeSight(tmp_path / "repo", settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    cs.index(embed=False, static=True)
    assert _consistent(cs)
    docs = cs.store.conn.execute("SELECT count(*) FROM static_docs").fetchone()[0]
    assert docs == 1  # only the chunk with a docstring has a doc view

    tier = cs.models.static_index(cs.store)
    assert tier is not None
    index, coverage = tier
    assert coverage == 1.0 and len(index.doc_rows) == 1
    model = index.model
    query = model.encode_query("how wide is one level of indentation in a piece of text")
    (cid,) = [i for (i,) in cs.store.conn.execute("SELECT id FROM chunks WHERE path = 'src/indent.py'")]
    whole = float(index.vectors([cid])[cid] @ query)
    view = float(index.doc_matrix[0] @ query)
    assert view > whole  # the docstring is nearer the question than the whole chunk
    near = dict(index.nearest(query, 10))
    assert near[cid] == pytest.approx(view, abs=1e-5)  # the nearer of the two counts
    assert max(near, key=near.__getitem__) == cid


def test_an_index_from_before_doc_views_keeps_its_static_tier_and_gets_them(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    cs.index(embed=False, static=True)
    with cs.store.transaction():  # as an index written before doc views had static vectors
        cs.store.conn.execute("DELETE FROM static_docs")
        cs.store.conn.execute("DELETE FROM meta WHERE key = 'static_docs'")
    assert not _consistent(cs)
    # Search goes on with the static vectors the index has...
    assert cs.search(GEO_QUERY, vectors=Vectors.STATIC).retrievers == ["bm25", "static"]
    # ...and the next run adds the doc views alone, embedding no chunk again, and says so.
    seen = []
    report = cs.index(embed=False, static=True, progress=lambda p: seen.append((p.phase, p.done, p.total)))
    assert report.static_embedded == 0 and _consistent(cs)
    n = cs.counts()["chunks"]
    assert ("static", n, n) in seen
    assert cs.store.get_meta("static_docs") == "1"
    assert cs.search(GEO_QUERY, vectors=Vectors.STATIC).retrievers == ["bm25", "static"]


def test_a_read_only_index_from_before_doc_views_keeps_its_static_tier(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path
) -> None:
    from codesight_tui.core.store.store import Store

    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    cs.index(embed=False, static=True)
    with cs.store.transaction():  # the schema before doc views
        cs.store.conn.execute("DROP TRIGGER chunks_ad_static_docs")
        cs.store.conn.execute("DROP TABLE static_docs")
    db = cs.store.db_path
    cs.close()
    ro = Store(db, readonly=True)  # nothing can add the table
    try:
        ids, matrix = ro.static_matrix(256, docs=True)
        assert len(ids) == 0 and matrix.shape == (0, 256)
        found = cs.models.static_index(ro)
        assert found is not None
        index, coverage = found
        assert len(index) > 0 and coverage == 1.0 and len(index.doc_rows) == 0
    finally:
        ro.close()


def test_full_vectors_take_over_from_the_static_tier(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    cs.index()  # static first, then the full model
    assert cs.counts()["pending"] == 0 and _consistent(cs)
    # Full coverage: the static list has nothing left to add and is not fused.
    assert cs.search("read the config file").retrievers == ["bm25", "vector"]
    # ``fast`` answers without the full model even where it is loaded.
    assert cs.search("read the config file", vectors=Vectors.STATIC).retrievers == ["bm25", "static"]
    # Filters hold for the static list too.
    assert all(h.language == "go" for h in cs.search(GEO_QUERY, vectors=Vectors.STATIC, language="go"))
    assert all(h.path.startswith("web/") for h in cs.search(GEO_QUERY, vectors=Vectors.STATIC, glob="web/**"))


def test_another_static_model_replaces_the_vectors(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, static_model_dir: Path, tmp_path: Path
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(static_model_dir))
    cs.index(embed=False, static=True)
    other = tmp_path / "other-static"
    shutil.copytree(static_model_dir, other)
    cs2 = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(other))
    # Vectors of another model are never mixed in: until re-indexed, the static list is not used.
    assert cs2.search(GEO_QUERY, vectors=Vectors.STATIC).retrievers == ["bm25"]
    report = cs2.index(embed=False, static=True)
    assert report.static_embedded == cs2.counts()["chunks"] and _consistent(cs2)
    assert cs2.search(GEO_QUERY, vectors=Vectors.STATIC).retrievers == ["bm25", "static"]


def test_missing_static_model_is_a_warning_not_a_failure(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, tmp_path: Path
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder, static_model=str(tmp_path / "nothing"))
    report = cs.index(embed=False, static=True)
    assert report.files > 0 and any("no model2vec model" in w for w in report.warnings)
    assert cs.search("haversine", vectors=Vectors.STATIC)[0].path == "src/geo.py"


def _auto_home(settings: Settings, static_model_dir: Path) -> Path:
    """Put the session's distilled model where ``static_model = "distilled"`` looks for it."""
    from codesight_tui.core.ingest.tokens import resolve_model

    info = resolve_model(settings.embedding_model)
    dest = distilled_dir(settings.cache_dir, info.name, info.load_from)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(static_model_dir, dest)
    return dest


def test_cli_search_answers_without_torch(
    repo: Path, settings: Settings, static_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh `codesight search` on a fresh repository indexes the lexical phase and the static
    tier only, and answers from BM25 + static without importing torch."""
    _auto_home(settings, static_model_dir)
    monkeypatch.setenv("CODESIGHT_STATIC_MODEL", "distilled")
    probe = (
        "import sys, json; from codesight_tui.cli import main; rc = main(sys.argv[1:]);"
        " print(json.dumps({'rc': rc, 'torch': 'torch' in sys.modules}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, "search", GEO_QUERY, "--path", str(repo), "--json", "-y"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=repo,
    )
    *hits_json, tail = run.stdout.strip().splitlines()
    assert json.loads(tail) == {"rc": 0, "torch": False}, run.stderr[-2000:]
    hits = json.loads("\n".join(hits_json))
    assert hits[0]["path"] == "src/geo.py" and hits[0]["static_rank"] == 1
    status = CodeSight(repo).status(check_disk=False)
    assert status["static_vectors"] == status["chunks"] > 0 and status["vectors"] == 0
    # --full with no full-model vector to search loads nothing (that took 21 s for the same answer)
    # and says how to get them, with what that costs here (issue 66 item 16).
    full = subprocess.run(
        [sys.executable, "-c", probe, "search", "haversine", "--path", str(repo), "--json", "--full"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=repo,
    )
    *hits_json, tail = full.stdout.strip().splitlines()
    assert json.loads(tail) == {"rc": 0, "torch": False}, full.stderr[-2000:]
    assert json.loads("\n".join(hits_json))[0]["path"] == "src/geo.py"
    assert "`codesight index --full` computes them (about " in full.stderr


def test_a_search_after_a_bm25_only_index_gets_the_static_tier_first(
    repo: Path, settings: Settings, static_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first search in bm25 mode indexes the lexical phase alone. The next hybrid search used to
    find an index, skip the static tier, load the full model and answer from BM25, every time: it
    now computes the static vectors first (seconds) and answers from BM25 + static, without torch."""
    _auto_home(settings, static_model_dir)
    monkeypatch.setenv("CODESIGHT_STATIC_MODEL", "distilled")
    first = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "search", "haversine", "--mode", "bm25", "--path", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=repo,
    )
    assert first.returncode == 0, first.stderr[-2000:]
    assert CodeSight(repo).status(check_disk=False)["static_vectors"] == 0
    probe = (
        "import sys, json; from codesight_tui.cli import main; rc = main(sys.argv[1:]);"
        " print(json.dumps({'rc': rc, 'torch': 'torch' in sys.modules}))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, "search", GEO_QUERY, "--path", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=repo,
    )
    *hits_json, tail = run.stdout.strip().splitlines()
    assert json.loads(tail) == {"rc": 0, "torch": False}, run.stderr[-2000:]
    assert "computing them first" in run.stderr and "without the full model's vectors" not in run.stderr
    assert json.loads("\n".join(hits_json))[0]["static_rank"] == 1
    status = CodeSight(repo).status(check_disk=False)
    assert status["static_vectors"] == status["chunks"] > 0


@pytest.mark.model
def test_auto_tier_with_the_real_model(repo: Path, settings: Settings, static_model_dir: Path) -> None:
    """``static_model = "distilled"`` finds the distilled model; part-way through the full model,
    hybrid search fuses all three lists."""
    _auto_home(settings, static_model_dir)
    cs = CodeSight(repo, settings=settings.model_copy(update={"static_model": "distilled"}))
    cs.index(embed=False, static=True)
    assert cs.static_path() is not None and cs.status(check_disk=False)["static_coverage"] == 1.0
    cs.limit_vectors(0.5)
    hits = cs.search(GEO_QUERY)
    assert hits.retrievers == ["bm25", "static", "vector"]
    geo = next(h for h in hits if h.path == "src/geo.py")
    assert geo.static_rank == 1 and any(h.vector_rank for h in hits)
    cs.close()


async def test_tui_answers_from_the_static_tier_while_the_full_model_is_missing(
    repo: Path, settings: Settings, static_model_dir: Path
) -> None:
    """The TUI's index run gives every chunk a static vector without the full model; hybrid
    results then come from BM25 + the static tier (badge ``v``), and the status bar says so."""
    from rich.text import Text
    from surfaces import BrokenModelEngine, search, settle

    from codesight_tui.tui.app import CodeSightApp
    from codesight_tui.tui.messages import ModelFailed
    from codesight_tui.tui.widgets.results import result_row
    from codesight_tui.tui.widgets.status import StatusBar

    engine = BrokenModelEngine(repo, settings=settings, static_model=str(static_model_dir))
    app = CodeSightApp(repo, engine=engine, watch=False)
    messages: list[object] = []
    async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
        await settle(app, pilot)
        assert any(isinstance(m, ModelFailed) for m in messages)
        assert engine.status(check_disk=False)["static_coverage"] == 1.0
        await search(app, pilot, GEO_QUERY)
        assert app.state.retrievers == ("bm25", "static")
        assert app.hits[0].path == "src/geo.py" and app.hits[0].found_by == "static"
        assert result_row(1, app.hits[0], width=76).plain.split()[1] == "v"
        text = Text.from_markup(app.query_one(StatusBar).render_state(app.state, width=78)).plain
        assert "hybrid: bm25+static" in text and "lexical only" not in text


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_static_goes_first_on_a_cpu_and_after_the_full_model_on_a_gpu(
    repo: Path, settings: Settings, static_model_dir: Path, device: str
) -> None:
    """On a CPU the static tier comes right after the lexical phase (semantic search in seconds);
    where the full model runs on a GPU it is done about as soon, so it goes first at full speed."""
    from conftest import HashEmbedder

    embedder = HashEmbedder()
    embedder.device = device  # the stand-in says where it runs, as the real models do
    cs = CodeSight(repo, settings=settings, embedder=embedder, static_model=str(static_model_dir))
    phases: list[str] = []
    cs.index(progress=lambda ev: phases.append(ev.phase) if ev.phase not in phases else None)
    assert phases.index("lexical") < phases.index("static")
    assert (phases.index("static") < phases.index("embed")) == (device == "cpu")
    assert _consistent(cs) and cs.counts()["pending"] == 0


@pytest.mark.model
def test_the_shipped_static_model_is_the_default_and_answers_a_plain_question(repo: Path, settings: Settings) -> None:
    """Issue 49: with the bundled full model, ``static_model = "auto"`` is the static model shipped in
    the package (trained on code; no distillation on a first run), with its own relevance floor;
    the issue's fixture question finds the LRU cache in the top 3 from BM25 + static."""
    from codesight_tui.core.index.static import PACKAGED_DIR, StaticEmbedder, is_model_dir

    assert is_model_dir(PACKAGED_DIR)
    cs = CodeSight(repo, settings=settings.model_copy(update={"static_model": "auto"}))
    assert cs.static_path() == PACKAGED_DIR
    model = StaticEmbedder(PACKAGED_DIR)
    assert model.dim == 256 and model.relevance_floor < 0.3
    report = cs.index(embed=False, static=True)
    assert report.distill_seconds == 0 and cs.status(check_disk=False)["static_coverage"] == 1.0
    cs.close()
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "training" / "fixture_question.py"
    out = subprocess.run([sys.executable, str(script), "auto"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-1000:]
    rank = out.stdout.split("storage/cache.py at ")[1].split(";")[0]
    assert rank.isdigit() and int(rank) <= 3, out.stdout
