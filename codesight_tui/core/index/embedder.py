"""Local sentence-transformers embeddings: device choice, fp16 on GPU, length-sorted batches.

torch and sentence-transformers are imported here only, and only when a model is loaded, so
lexical search and ``status`` never pay for them.

On a GPU the model outruns one CPU thread of tokenising by far (MiniLM's forward pass on 512
chunks takes milliseconds; tokenising them takes tens), so ``encode`` there tokenises batches in a
pool of threads (the Rust tokenizer releases the GIL), ahead of the model, and keeps every vector
on the device until the end: the GPU is never left waiting on one tokenizer or on a copy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.ingest.tokens import ModelInfo

if TYPE_CHECKING:
    import subprocess
    from multiprocessing.connection import Connection


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
            raise UsageError("CODESIGHT_DEVICE=cuda but no CUDA device is available")
        return requested
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


GPU_BATCH = 256  # texts per forward pass on a GPU (fp16, length-sorted; 256 beat 512 and 1024 on an H100)


def tokenizer_threads() -> int:
    """Threads that tokenise ahead of a GPU: enough to keep it fed, leaving a core for Python."""
    return max(1, min(8, (os.cpu_count() or 2) - 1))


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
        except Exception as exc:  # no network, bad path, broken weights, ...  # noqa: BLE001
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CodeSightError(f"cannot load embedding model {info.name!r}: {first}") from None
        if self.device == "cuda":
            model.half()
        self.model = model
        self.name = info.name
        self.max_seq_length: int | None = model.max_seq_length
        getdim: Any = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(getdim())
        self.batch_size = batch_size or (GPU_BATCH if self.device == "cuda" else 32)
        self.tokenizer_file = info.tokenizer_file
        # Tokenise in threads ahead of the model where the model is fast enough to wait on one
        # tokenizer (a GPU); on a CPU the model is the bottleneck and its threads want the cores.
        self._tok_local = threading.local()
        self._tok_pool: ThreadPoolExecutor | None = None
        self._pad_id = getattr(getattr(model, "tokenizer", None), "pad_token_id", None) or 0
        self._pin = self.device == "cuda"
        self.overlap = self.device == "cuda" and self._overlap_safe()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``; sentence-transformers sorts them by length so batches carry no padding
        waste."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.overlap:
            return self._encode_overlapped(texts)
        vecs = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode([text])[0]
        return vector

    # --- the overlapped path --------------------------------------------------------------
    def _tokenizer(self) -> Any:
        """This thread's own copy of the model's fast tokenizer (one copy may not be used from two
        threads at once), truncating to the model's window like sentence-transformers does."""
        tok = getattr(self._tok_local, "tok", None)
        if tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.tokenizer_file))
            tok.no_padding()
            tok.enable_truncation(cast(int, self.max_seq_length))  # None fails here: _overlap_safe says no
            self._tok_local.tok = tok
        return tok

    def _overlap_safe(self) -> bool:
        """Whether the overlapped path computes exactly what ``model.encode`` does for this model:
        its ``tokenizer.json`` is known, encode adds no default prompt, and a text's token type
        ids are all 0 (what BERT-style models assume when none are given: the path sends ids and
        the attention mask only). Anything else keeps sentence-transformers' own ``encode``."""
        if self.tokenizer_file is None or getattr(self.model, "default_prompt_name", None):
            return False
        try:
            return not any(self._tokenizer().encode("a b").type_ids)
        except Exception:  # a tokenizer file the Rust library can't load  # noqa: BLE001
            return False

    def _features(self, texts: list[str]) -> Any:
        """One batch as a single int64 tensor: token ids padded to the longest text, and each
        text's length in the last column (the mask is built on the device from it). Pinned on a
        GPU so that its copy overlaps the model's work."""
        import torch

        tok = self._tokenizer()
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)  # no offsets: faster
        ids = [e.ids for e in encode(texts)]  # the Rust part releases the GIL
        width = max(len(x) for x in ids)
        arr = np.full((len(ids), width + 1), self._pad_id, dtype=np.int64)
        for i, x in enumerate(ids):
            arr[i, : len(x)] = x
            arr[i, width] = len(x)
        t = torch.from_numpy(arr)
        if self._pin:
            try:
                return t.pin_memory()
            except RuntimeError:  # no page-locked memory to be had here: plain copies still work
                self._pin = False
        return t

    def _encode_overlapped(self, texts: list[str]) -> np.ndarray:
        """Length-sorted batches, tokenised by a thread pool ahead of the model; vectors stay on
        the device until one copy at the end. The same vectors as ``model.encode``."""
        import torch

        # Shortest first: the model starts on a batch that tokenises quickly, and batches of
        # similar length carry little padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        bs = self.batch_size
        parts = [[texts[i] for i in order[k : k + bs]] for k in range(0, len(order), bs)]
        futures: list[Future[Any]] = []
        batches: Iterable[Any]
        if len(texts) <= 8:  # a query: a thread hop costs more than it saves
            batches = map(self._features, parts)
        else:
            pool = self._tok_pool
            if pool is None:
                pool = self._tok_pool = ThreadPoolExecutor(tokenizer_threads(), thread_name_prefix="codesight-tok")
            futures = [pool.submit(self._features, p) for p in parts]
            batches = (f.result() for f in futures)
        out = []
        try:
            with torch.inference_mode():
                for packed in batches:
                    packed = packed.to(self.device, non_blocking=True)
                    ids, lengths = packed[:, :-1], packed[:, -1]
                    mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]).long()
                    emb = self.model({"input_ids": ids, "attention_mask": mask})["sentence_embedding"]
                    out.append(torch.nn.functional.normalize(emb.float(), p=2, dim=1))
                vecs = torch.cat(out).cpu().numpy()
        finally:
            for fut in futures:
                fut.cancel()
        result = np.empty_like(vecs)
        result[np.asarray(order)] = vecs
        return result


def in_process(info: ModelInfo, device: str = "auto", batch_size: int = 0) -> Any:
    """The embedder ``info``'s backend names, in this process."""
    if info.backend.startswith("onnx"):
        from codesight_tui.core.index.onnx_model import OnnxEmbedder

        return OnnxEmbedder(info, batch_size)
    return SentenceTransformerEmbedder(info, device, batch_size)


def serve(fds: list[int], info: ModelInfo, device: str, batch_size: int) -> None:
    """Child process (``python -m codesight_tui.core.index.embedder``): load the model, then answer
    ``encode`` requests on each connection in its own thread, so bulk indexing and queries never
    queue behind each other."""
    import threading
    from multiprocessing.connection import Connection

    conns = [Connection(fd) for fd in fds]
    try:
        emb = in_process(info, device, batch_size)
    except Exception as exc:  # noqa: BLE001 - the model failing to load in the child is told to the parent, not lost
        for c in conns:
            c.send((False, str(exc)))
        return
    meta = (emb.name, emb.dim, emb.device, emb.batch_size, emb.max_seq_length)
    for c in conns:
        c.send((True, meta))

    def loop(conn: Connection) -> None:
        while True:
            try:
                texts = conn.recv()
            except (EOFError, OSError):
                return  # the parent closed its end or died: stop
            out: tuple[bool, Any]
            try:
                out = (True, emb.encode(texts))
            except Exception as exc:  # noqa: BLE001 - one failed batch is answered as failed; the child serves the next
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


# Model processes still loading (importing torch and the weights: seconds, half a minute on a busy
# CPU): a quitting app ends them at once instead of waiting for a model nobody will use.
_STARTING: set[subprocess.Popen[bytes]] = set()
_STARTING_LOCK = threading.Lock()


def stop_starting() -> None:
    """End every model process of this process that is still loading; whoever waits for one gets
    a ``CodeSightError`` within 50 ms."""
    with _STARTING_LOCK:
        procs = list(_STARTING)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()


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
        spec = json.dumps(
            [
                info.name,
                info.load_from,
                str(info.tokenizer_file or ""),
                info.max_seq_length,
                info.backend,
                info.export_dir,
                device,
                batch_size,
            ]
        )
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "codesight_tui.core.index.embedder", spec, *map(str, child_fds)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=child_fds,
                close_fds=True,
                # run from the directory holding this very package, so `-m` finds this copy and
                # never a `codesight_tui/` folder that happens to sit in the user's cwd
                cwd=str(Path(__file__).resolve().parents[3]),
            )
        finally:
            for _, b in pairs:
                b.close()
        bulk, query = (Connection(a.detach()) for a, _ in pairs)
        self._conns = {"bulk": (bulk, threading.Lock()), "query": (query, threading.Lock())}
        with _STARTING_LOCK:
            _STARTING.add(self._proc)
        try:
            ok, meta = self._recv(bulk)
            self._recv(query)
        except CodeSightError:
            self.close()
            raise CodeSightError(f"cannot load embedding model {info.name!r}: its process exited") from None
        finally:
            with _STARTING_LOCK:
                _STARTING.discard(self._proc)
        if not ok:
            self.close()
            raise CodeSightError(meta)
        self.name, self.dim, self.device, self.batch_size, self.max_seq_length = meta

    def _recv(self, conn: Connection) -> Any:
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
        vectors: np.ndarray = out
        return vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._call("bulk", list(texts))

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._call("query", [text])[0]
        return vector

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

    name, load_from, tok, max_len, backend, export_dir, dev, bs = json.loads(sys.argv[1])
    serve(
        [int(fd) for fd in sys.argv[2:]],
        ModelInfo(name, load_from, Path(tok) if tok else None, max_len, backend, export_dir),
        dev,
        bs,
    )
