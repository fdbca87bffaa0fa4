"""The static tier: a model2vec model distilled from the bundled sentence-transformers model.

A static model is a table of token vectors: a text's vector is the mean of its tokens' rows, with
no transformer at index or query time. It embeds about 700 times faster than MiniLM on a CPU and
loads without torch, so a repository gets semantic search seconds after its lexical phase, and a
fresh ``codesight search`` process answers in well under a second.

The model is distilled once per machine and base model (``model2vec.distill``: every token of the
base model's vocabulary through the base model, PCA to ``PCA_DIMS``, Zipf weighting), offline,
into ``<cache_dir>/static/``: in a child process (torch stays out of the caller), under a file
lock (two indexers distil once), into a temporary folder renamed into place (a crash leaves
nothing half-written). ``static_model`` in the settings may instead name any model2vec folder, or
``off``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.fusion import STATIC_RELEVANCE_FLOOR
from codesight_tui.core.ingest.paths import slug

PCA_DIMS = 256  # measured against 128 and no PCA: see benchmarks/README.md, "Static tier"
DISTILL_TIMEOUT = 1800  # seconds: a distillation that has not finished by then is abandoned


def distilled_dir(cache_dir: Path, base_name: str, base_path: Path | str | None) -> Path:
    """Where the static model distilled from ``base_name`` lives (one per base model and
    ``PCA_DIMS``; the base model's folder is part of the key, so another copy distils anew)."""
    digest = hashlib.sha256(f"{base_name}\0{base_path}\0{PCA_DIMS}".encode()).hexdigest()[:10]
    return Path(cache_dir).expanduser() / "static" / f"{slug(base_name)}-pca{PCA_DIMS}-{digest}"


PACKAGED_DIR = Path(__file__).resolve().parents[2] / "models" / "static"


def packaged_model(base_name: str) -> Path | None:
    """The static model shipped in the package, for the bundled full model: MiniLM's tokenizer,
    its distilled table trained on (description, code) pairs for retrieval (issue 49; recipe and
    corpus manifest in benchmarks/training/). None where it is absent or another full model is
    configured, whose own distillation then serves."""
    from codesight_tui.core.config import DEFAULT_MODEL

    if base_name != DEFAULT_MODEL or not is_model_dir(PACKAGED_DIR):
        return None
    return PACKAGED_DIR


def is_model_dir(path: Path) -> bool:
    """Whether ``path`` holds a model2vec model (its vectors and its tokenizer)."""
    return (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()


def distill(
    base_path: Path, dest: Path, *, timeout: float = DISTILL_TIMEOUT, cancel: threading.Event | None = None
) -> float:
    """Distil the sentence-transformers model in ``base_path`` into ``dest`` (unless another
    process did already); returns the seconds it took (0 if nothing was done). Raises
    ``CodeSightError`` with one line if it can't. The work runs in a child process, so that torch
    and its threads never load into the caller; ``cancel`` ends the child."""
    from filelock import FileLock

    if is_model_dir(dest):
        return 0.0
    base_path, dest = Path(base_path).expanduser().resolve(), Path(dest).expanduser().resolve()
    if not base_path.is_dir():
        raise CodeSightError(
            f"cannot distil a static model from {base_path}: not a local model folder"
            " (set static_model to a model2vec folder, or off)"
        )
    from codesight_tui.core.private import private_dir

    private_dir(dest.parent)
    with FileLock(str(dest) + ".lock", mode=0o600):
        if is_model_dir(dest):  # another process distilled it while this one waited
            return 0.0
        tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "codesight_tui.core.index.static", str(base_path), str(tmp)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # from the folder holding this package: `-m` must never pick up a
            # `codesight_tui/` or `json.py` that sits in the caller's directory
            cwd=str(Path(__file__).resolve().parents[3]),
            text=True,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None:
                if (cancel is not None and cancel.is_set()) or time.monotonic() > deadline:
                    proc.kill()
                    proc.wait()
                    raise CodeSightError(
                        "distilling the static model was "
                        + ("cancelled" if cancel is not None and cancel.is_set() else "too slow")
                    )
                time.sleep(0.1)
            out = proc.stdout.read() if proc.stdout else ""
            if proc.returncode != 0 or not is_model_dir(tmp):
                last = next((ln for ln in reversed(out.strip().splitlines()) if ln.strip()), "no output")
                raise CodeSightError(f"could not distil a static model from {base_path}: {last[-300:]}")
            os.replace(tmp, dest)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        return time.perf_counter() - t0


class StaticEmbedder:
    """A model2vec model behind the same interface as the full model: L2-normalised float32
    vectors, ``encode`` for chunks and ``encode_query`` for a query.

    It reads model2vec's folder layout itself (``model.safetensors`` with ``embeddings`` and the
    optional ``weights`` and ``mapping``, ``tokenizer.json``, ``config.json``) and encodes as
    ``StaticModel.encode`` does: the tokens' rows, averaged, normalised (a test checks the vectors
    against model2vec's own). Importing model2vec pulls in huggingface_hub, 0.4 s of a fresh CLI
    process's budget; this loads in tens of milliseconds and never imports torch."""

    def __init__(self, path: Path) -> None:
        import json

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.path = Path(path)
        try:
            tensors = load_file(str(self.path / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
            config = (
                json.loads((self.path / "config.json").read_text()) if (self.path / "config.json").is_file() else {}
            )
            embeddings = tensors.get("embeddings", tensors.get("embedding.weight"))
            if embeddings is None or embeddings.ndim != 2:
                raise ValueError("no embeddings matrix in model.safetensors")
        except Exception as exc:  # noqa: BLE001 - safetensors, tokenizers and json each raise their own: one line
            raise CodeSightError(f"cannot load the static model at {path}: {exc}") from None
        self.embeddings = embeddings.astype(np.float32)
        self.weights = tensors.get("weights")
        self.mapping = tensors.get("mapping")
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self.tokenizer = tokenizer
        self.max_length = int(config.get("max_length") or 512)
        # Under this cosine a query's nearest chunk counts as unrelated (searcher); a trained model
        # says its own, the distilled one the default its floor was measured with.
        try:
            self.relevance_floor = float(config.get("relevance_floor", STATIC_RELEVANCE_FLOOR))
        except (TypeError, ValueError):
            self.relevance_floor = STATIC_RELEVANCE_FLOOR
        # Most code is printable ASCII, whose tokens a BERT-style tokenizer makes word by word:
        # those texts' ids come from a per-word cache (exactly the tokenizer's), the rest from it.
        from codesight_tui.core.ingest.tokens import WordPieces

        self.words = WordPieces.for_file(tokenizer, self.path / "tokenizer.json")
        unk = getattr(tokenizer.model, "unk_token", None)
        self.unk_id = tokenizer.token_to_id(unk) if unk else None
        self.dim = int(self.embeddings.shape[1])
        # As model2vec does: texts are cut to max_length times the median token's length in
        # characters before tokenising (the tokens past max_length are dropped anyway).
        self.max_chars = self.max_length * int(np.median([len(t) for t in tokenizer.get_vocab()]) or 1)
        # The name identifies the vectors: another distillation (or another folder) means others.
        stamp = (self.path / "model.safetensors").stat()
        self.name = f"static:{self.path.name}:{stamp.st_size}:{int(stamp.st_mtime)}"
        self.device = "cpu"

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids, lengths = self.token_ids([t[: self.max_chars] for t in texts])
        known = ids != self.unk_id if self.unk_id is not None else None
        if known is not None and not known.all():  # unknown tokens count for nothing
            ids = ids[known]
            lengths = np.bincount(np.repeat(np.arange(len(texts)), lengths)[known], minlength=len(texts))
        if not lengths.any():
            return out
        if len(texts) == 1:  # a query: its rows, averaged
            vecs = self.embeddings[ids if self.mapping is None else self.mapping[ids]]
            if self.weights is not None:
                vecs = vecs * self.weights[ids][:, None]
            out[0] = vecs.mean(axis=0)
            return _normalise(out)
        # A batch: one sparse (texts x vocabulary) matrix of token weights times the embeddings,
        # without materialising a row per token (a batch of chunks holds half a million tokens).
        from scipy.sparse import csr_matrix

        weight = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
        if self.weights is not None:
            weight *= self.weights[ids]
        cols = ids if self.mapping is None else self.mapping[ids]
        counts = csr_matrix(
            (weight, cols, np.concatenate(([0], np.cumsum(lengths)))), shape=(len(texts), self.embeddings.shape[0])
        )
        out[:] = counts @ self.embeddings
        return _normalise(out)

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every text's token ids as the tokenizer gives them (no special tokens), the first
        ``max_length`` of each, in one array; and how many each text has."""
        if self.words is not None:
            return self.words.ids(texts, self.max_length)
        rows = [enc.ids[: self.max_length] for enc in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
        return (
            np.fromiter(itertools.chain.from_iterable(rows), np.int64),
            np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)),
        )

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode([text])[0]
        return vector

    def known_share(self, words: list[str]) -> float:
        """The share of ``words`` that are whole words of the model's vocabulary (one token, not
        the unknown one). Random strings break into word pieces, and a static vector built from
        pieces lands near everything: without a known word it is no evidence of anything."""
        if not words:
            return 0.0
        known = 0
        for w in words:
            ids = self.tokenizer.encode(w, add_special_tokens=False).ids
            known += len(ids) == 1 and ids[0] != self.unk_id
        return known / len(words)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class StaticIndex:
    """Every static vector of an index in memory (float32; 100,000 chunks are 100 MB at 256
    dimensions), searched exactly: one matrix product, a few milliseconds.

    ``doc_ids`` and ``doc_matrix`` are the vectors of chunks' doc views (their comments and
    docstrings under their first line): a chunk's similarity is the nearer of its two, as in the
    full model's table. A question about behaviour meets a docstring's words better than the whole
    chunk's, which its code dominates. NDCG@10 in fast mode: polyglot fold A 0.8777 -> 0.8798,
    fold B 0.8673 -> 0.8684, devset 0.693 -> 0.695 (benchmarks/README.md, "Static tier")."""

    def __init__(
        self,
        model: StaticEmbedder,
        ids: np.ndarray,
        matrix: np.ndarray,
        doc_ids: np.ndarray | None = None,
        doc_matrix: np.ndarray | None = None,
    ) -> None:
        self.model = model
        self.ids = ids  # ascending
        self.matrix = matrix
        self.doc_rows = np.zeros(0, dtype=np.int64)  # the row in ``matrix`` of each doc vector's chunk
        self.doc_matrix = np.zeros((0, matrix.shape[1]), dtype=np.float32)
        if doc_ids is not None and doc_matrix is not None and len(doc_ids):
            rows, have = self._rows(doc_ids)  # a doc vector whose chunk has no vector (yet) waits for it
            self.doc_rows, self.doc_matrix = rows[have], doc_matrix[have]

    def _rows(self, ids: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Each chunk id's row in ``matrix``, and whether it has one there."""
        if not len(self.ids):
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        rows = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return rows, self.ids[rows] == np.asarray(ids)

    def __len__(self) -> int:
        return len(self.ids)

    def nearest(self, query_vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """``(chunk id, cosine)`` of the ``limit`` nearest chunks, nearest first."""
        if not len(self.ids) or limit <= 0:
            return []
        q = np.asarray(query_vector, dtype=np.float32)
        sims = self.matrix @ q
        if len(self.doc_rows):  # doc_rows are unique: one doc view per chunk
            sims[self.doc_rows] = np.maximum(sims[self.doc_rows], self.doc_matrix @ q)
        limit = min(limit, len(sims))
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(self.ids[k]), float(sims[k])) for k in top]

    def vectors(self, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored static vectors of chunk ids, by id (those it has)."""
        ids = list(ids)
        if not ids:
            return {}
        rows, have = self._rows(ids)
        return {cid: self.matrix[r] for cid, r, ok in zip(ids, rows.tolist(), have.tolist(), strict=False) if ok}


_LOADED: dict[str, StaticEmbedder] = {}
_LOADED_LOCK = threading.Lock()


def load(path: Path) -> StaticEmbedder:
    """The process's one instance of the static model in ``path`` (every repository shares it)."""
    key = str(Path(path).resolve())
    with _LOADED_LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = StaticEmbedder(Path(path))
        return model


def _distill_main(base: str, dest: str) -> None:
    """The child process of ``distill``: offline, on the best device there is."""
    import logging

    logging.disable(logging.WARNING)
    from model2vec.distill import distill as m2v_distill

    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        device = "cpu"
    model = m2v_distill(model_name=base, pca_dims=PCA_DIMS, device=device)
    model.save_pretrained(dest)


if __name__ == "__main__":
    _distill_main(sys.argv[1], sys.argv[2])
