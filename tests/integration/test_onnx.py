"""The full model through ONNX Runtime (issue 30, item 4): exported for real from the bundled
MiniLM, once, into the cache directory; the float32 export makes torch's vectors and shares their
name, the int8 one has its own; an index and a search run on it end to end with no torch in the
process that embeds."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from codesight_tui import CodeSight
from codesight_tui.core.config import DEFAULT_MODEL, Settings
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.index.embedder import ProcessEmbedder, SentenceTransformerEmbedder
from codesight_tui.core.index.onnx_model import OnnxEmbedder, export, export_dir, exportable, for_backend, is_exported
from codesight_tui.core.ingest.tokens import ModelInfo, resolve_model

pytestmark = pytest.mark.model

TEXTS = [
    "def haversine(lat1, lon1, lat2, lon2):\n    return 2 * R * asin(sqrt(a))",
    "function retryUpload(file, attempts) { return fetch(url, {method: 'PUT', body: file}) }",
    "the quick brown fox",
    "class RetryPolicy:\n    max_attempts: int = 3\n    backoff_factor: float = 0.5\n" * 20,  # past the window
]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory holding both exports, made for real once for this module."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    info = resolve_model(DEFAULT_MODEL)
    for backend in ("onnx", "onnx-int8"):
        assert export(replace(info, backend=backend), export_dir(cache, info, backend)) > 0
    return cache


def _info(cache: Path, backend: str) -> ModelInfo:
    return for_backend(resolve_model(DEFAULT_MODEL), backend, "auto", False, cache)


def test_float32_export_makes_torchs_vectors_under_torchs_name(
    onnx_cache: Path, real_embedder: SentenceTransformerEmbedder
) -> None:
    onnx = OnnxEmbedder(_info(onnx_cache, "onnx"))
    assert onnx.name == real_embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert onnx.dim == 384 and onnx.device == "cpu"
    got, want = onnx.encode(TEXTS), real_embedder.encode(TEXTS)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert float((got * want).sum(1).min()) > 0.9999  # truncation to the window included
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    assert np.allclose(onnx.encode_query(TEXTS[0]), want[0], atol=1e-3)
    assert onnx.encode([]).shape == (0, 384)


def test_int8_export_is_close_but_named_apart(onnx_cache: Path, real_embedder: SentenceTransformerEmbedder) -> None:
    int8 = OnnxEmbedder(_info(onnx_cache, "onnx-int8"))
    assert int8.name == "sentence-transformers/all-MiniLM-L6-v2+onnx-int8"
    cos = (int8.encode(TEXTS) * real_embedder.encode(TEXTS)).sum(1)
    assert cos.min() > 0.95 and cos.max() < 0.99999  # close, not the same vectors
    sizes = {
        b: (export_dir(onnx_cache, resolve_model(DEFAULT_MODEL), b) / "model.onnx").stat().st_size
        for b in ("onnx", "onnx-int8")
    }
    assert sizes["onnx-int8"] < 0.7 * sizes["onnx"]


def test_exports_are_private_and_made_once(onnx_cache: Path) -> None:
    info = resolve_model(DEFAULT_MODEL)
    for backend in ("onnx", "onnx-int8"):
        folder = export_dir(onnx_cache, info, backend)
        assert is_exported(folder)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert {stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()} == {0o600}
        assert export(replace(info, backend=backend), folder) == 0.0  # there already: nothing done
    assert stat.S_IMODE((onnx_cache / "onnx").stat().st_mode) == 0o700
    assert not list((onnx_cache / "onnx").glob("*.tmp-*"))


def test_auto_is_onnx_on_a_cpu_and_torch_on_a_gpu(tmp_path: Path) -> None:
    info = resolve_model(DEFAULT_MODEL)
    assert exportable(info)
    assert for_backend(info, "auto", "auto", False, tmp_path).backend == "onnx"
    assert for_backend(info, "auto", "cpu", True, tmp_path).backend == "onnx"
    assert for_backend(info, "auto", "auto", True, tmp_path).backend == "torch"  # an NVIDIA GPU
    assert for_backend(info, "auto", "cuda", False, tmp_path).backend == "torch"
    assert for_backend(info, "torch", "cpu", False, tmp_path) is info


def test_a_model_the_export_cannot_compute_stays_on_torch(tmp_path: Path) -> None:
    """CLS pooling (or any other stack) would give other vectors: auto keeps torch, and asking for
    onnx is one clear error, with nothing left behind."""
    base = Path(resolve_model(DEFAULT_MODEL).load_from)
    other = tmp_path / "cls-model"
    shutil.copytree(base, other)
    cfg = other / "1_Pooling" / "config.json"
    cfg.write_text(
        cfg.read_text()
        .replace('"pooling_mode_cls_token": false', '"pooling_mode_cls_token": true')
        .replace('"pooling_mode_mean_tokens": true', '"pooling_mode_mean_tokens": false')
    )
    info = resolve_model(str(other))
    assert not exportable(info)
    assert for_backend(info, "auto", "cpu", False, tmp_path).backend == "torch"
    forced = for_backend(info, "onnx", "cpu", False, tmp_path / "cache")
    with pytest.raises(CodeSightError, match="could not export .* to ONNX: only Transformer \\+ mean Pooling"):
        OnnxEmbedder(forced)
    assert not is_exported(Path(forced.export_dir))
    assert not list(Path(forced.export_dir).parent.glob("*.tmp-*"))


def test_index_and_search_on_the_default_backend(
    repo: Path,
    onnx_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    real_embedder: SentenceTransformerEmbedder,
) -> None:
    """No backend configured, on a CPU: the ONNX export runs the index and the search, in a
    child process (as the apps run it), and the vectors land under torch's name, so a torch
    engine on the same index finds them current and embeds nothing."""
    monkeypatch.delenv("CODESIGHT_EMBEDDING_BACKEND")
    settings = Settings(data_dir=tmp_path / "data", cache_dir=onnx_cache)
    cs = CodeSight(repo, settings=settings, model_process=True)
    try:
        assert cs.model_info.backend == "onnx"
        report = cs.index()
        assert report.embedded == report.chunks and report.vectors_pending == 0
        hits = cs.search("great circle distance between two places on the globe", mode="vector", top_k=1)
        assert hits[0].path == "src/geo.py"
        assert isinstance(cs.models.loaded, ProcessEmbedder)
        st = cs.status(check_disk=False)
        assert st["model"] == "sentence-transformers/all-MiniLM-L6-v2" and st["backend"] == "onnx"
    finally:
        cs.close()
    again = CodeSight(repo, settings=settings, embedder=real_embedder)
    assert again.index().embedded == 0


def test_the_process_that_embeds_never_imports_torch(onnx_cache: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from codesight_tui.core.index.onnx_model import for_backend\n"
        "from codesight_tui.core.index.embedder import in_process\n"
        "from codesight_tui.core.ingest.tokens import resolve_model\n"
        f"info = for_backend(resolve_model('minilm'), 'onnx', 'cpu', False, Path({str(onnx_cache)!r}))\n"
        "v = in_process(info).encode(['hello'])\n"
        "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "(1, 384) False False"
