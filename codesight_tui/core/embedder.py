"""Local sentence-transformers embeddings: device choice, fp16 on GPU, length-sorted batches.

torch and sentence-transformers are imported here only, and only when a model is loaded, so
lexical search and ``status`` never pay for them.
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.tokens import ModelInfo


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors."""

    name: str
    dim: int
    device: str

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...


def pick_device(requested: str = "auto") -> str:
    """cuda, then mps, then cpu, unless ``requested`` names one."""
    import torch

    if requested != "auto":
        if requested == "cuda" and not torch.cuda.is_available():
            raise CodeSightError("CODESIGHT_DEVICE=cuda but no CUDA device is available", exit_code=2)
        return requested
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded with no network access for local paths."""

    def __init__(self, info: ModelInfo, device: str = "auto", batch_size: int = 0) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        if os.path.isdir(info.load_from):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer

            self.device = pick_device(device)
            model = SentenceTransformer(info.load_from, device=self.device)
        except CodeSightError:
            raise
        except Exception as exc:  # no network, bad path, broken weights, ...
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CodeSightError(f"cannot load embedding model {info.name!r}: {first}") from None
        if self.device == "cuda":
            model.half()
        self.model = model
        self.name = info.name
        self.max_seq_length = model.max_seq_length
        getdim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(getdim())
        self.batch_size = batch_size or (256 if self.device == "cuda" else 32)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; sentence-transformers sorts them by length so batches carry no padding
        waste."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]
