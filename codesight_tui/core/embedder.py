"""Local sentence-transformers embeddings: device choice, fp16 on GPU, length-sorted batches.

torch and sentence-transformers are imported here only, and only when a model is loaded, so
lexical search and ``status`` never pay for them.
"""

from __future__ import annotations

import os
from pathlib import Path
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


def serve(fds: list[int], info: ModelInfo, device: str, batch_size: int) -> None:
    """Child process (``python -m codesight_tui.core.embedder``): load the model, then answer
    ``encode`` requests on each connection in its own thread, so bulk indexing and queries never
    queue behind each other."""
    import threading
    from multiprocessing.connection import Connection

    conns = [Connection(fd) for fd in fds]
    try:
        emb = SentenceTransformerEmbedder(info, device, batch_size)
    except Exception as exc:
        for c in conns:
            c.send((False, str(exc)))
        return
    meta = (emb.name, emb.dim, emb.device, emb.batch_size, emb.max_seq_length)
    for c in conns:
        c.send((True, meta))

    def loop(conn) -> None:
        while True:
            try:
                texts = conn.recv()
            except (EOFError, OSError):
                return  # the parent closed its end or died: stop
            try:
                out = (True, emb.encode(texts))
            except Exception as exc:
                out = (False, f"embedding failed: {type(exc).__name__}: {exc}")
            try:
                conn.send(out)
            except OSError:
                return

    threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class ProcessEmbedder:
    """The same model, run in a child process.

    The calling process never imports torch: an interactive app's event loop then never stalls on
    torch's import (dlopen and module init hold the GIL for 100-200 ms at a time), on the model's
    Python code, or on garbage collections over torch's ~400k objects. ``close()`` ends the child at
    once, even mid-batch, so quitting never waits for a batch to finish. Bulk ``encode`` and
    ``encode_query`` use separate socket pairs, served by separate threads in the child.
    """

    def __init__(self, info: ModelInfo, device: str = "auto", batch_size: int = 0) -> None:
        import json
        import socket
        import subprocess
        import sys
        import threading
        from multiprocessing.connection import Connection

        pairs = [socket.socketpair() for _ in range(2)]
        child_fds = [b.fileno() for _, b in pairs]
        spec = json.dumps([info.name, info.load_from, str(info.tokenizer_file or ""), info.max_seq_length,
                           device, batch_size])
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "codesight_tui.core.embedder", spec, *map(str, child_fds)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=child_fds, close_fds=True,
                # run from the directory holding this very package, so `-m` finds this copy and
                # never a `codesight_tui/` folder that happens to sit in the user's cwd
                cwd=str(Path(__file__).resolve().parents[2]),
            )
        finally:
            for _, b in pairs:
                b.close()
        bulk, query = (Connection(a.detach()) for a, _ in pairs)
        self._conns = {"bulk": (bulk, threading.Lock()), "query": (query, threading.Lock())}
        try:
            ok, meta = self._recv(bulk)
            self._recv(query)
        except CodeSightError:
            self.close()
            raise CodeSightError(f"cannot load embedding model {info.name!r}: its process exited") from None
        if not ok:
            self.close()
            raise CodeSightError(meta)
        self.name, self.dim, self.device, self.batch_size, self.max_seq_length = meta

    def _recv(self, conn):
        try:
            while not conn.poll(0.05):
                if self._proc.poll() is not None:
                    raise EOFError
            return conn.recv()
        except (EOFError, OSError):
            raise CodeSightError("the embedding model process has stopped") from None

    def _call(self, which: str, texts: list[str]) -> np.ndarray:
        conn, lock = self._conns[which]
        with lock:
            try:
                conn.send(texts)
            except (OSError, ValueError):
                raise CodeSightError("the embedding model process has stopped") from None
            ok, out = self._recv(conn)
        if not ok:
            raise CodeSightError(out)
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._call("bulk", list(texts))

    def encode_query(self, text: str) -> np.ndarray:
        return self._call("query", [text])[0]

    def close(self) -> None:
        """End the child now (a batch in flight is dropped; its caller gets a CodeSightError)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(timeout=5)
        for conn, _ in self._conns.values():
            conn.close()


if __name__ == "__main__":
    import json
    import sys

    name, load_from, tok, max_len, dev, bs = json.loads(sys.argv[1])
    serve([int(fd) for fd in sys.argv[2:]], ModelInfo(name, load_from, Path(tok) if tok else None, max_len), dev, bs)
