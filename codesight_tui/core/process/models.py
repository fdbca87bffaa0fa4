"""The models an engine searches and indexes with: the full embedding model and the static tier.

The full model (MiniLM through sentence-transformers, in this process or in a child) is loaded
once per process and shared by every engine that uses the same model, device and batch size: the
MCP server and the service serve many repositories with one model. Loading holds only that
model's own lock, so an engine asking whether it is loaded (``borrow``) never waits for it.

The static tier (``core.index.static``) is a model2vec model distilled from the full model once per
machine, or a configured folder; ``Models`` distils it when asked to, sets aside one that no longer
loads, and keeps each index's static vectors in memory for search until they change.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.index.embedding import index_static
from codesight_tui.core.index.indexer import IndexReport, Progress, ProgressFn
from codesight_tui.core.ingest.tokens import ModelInfo

if TYPE_CHECKING:
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.static import StaticEmbedder, StaticIndex
    from codesight_tui.core.store.store import Store

_ModelKey = tuple[str, str, str, str, int, bool]
_MODELS: dict[_ModelKey, Any] = {}  # one loaded model per (model, device, batch, process) for the whole process
_MODELS_LOCK = threading.Lock()  # guards the two dicts, never held while a model loads
_LOADING: dict[_ModelKey, threading.Lock] = {}  # one lock per model being loaded


RATE_FILE = "full-model-rate"  # in the cache directory: the last full run's chunks a second
# The full model's rate on a CPU when none was measured here yet: the bundled MiniLM through ONNX on
# this project's 2-core machine embedded 26 chunks a second quiet and 3.7-7.7 beside other work
# (issue 66); an estimate errs long rather than short.
FULL_RATE = 10.0


def _model_key(info: ModelInfo, device: str, batch_size: int, in_child: bool) -> _ModelKey:
    return (info.vectors_name, str(info.load_from), info.export_dir, device, batch_size, in_child)


def shared_embedder(info: ModelInfo, device: str, batch_size: int, in_child: bool) -> Any:
    """The process's one instance of a model: the first caller loads it, every repository's
    engine after that gets the same object. Loading holds only this model's own lock."""
    key = _model_key(info, device, batch_size, in_child)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:
        with _MODELS_LOCK:
            model = _MODELS.get(key)
        if model is None:
            from codesight_tui.core.index.embedder import ProcessEmbedder, in_process

            model = ProcessEmbedder(info, device, batch_size) if in_child else in_process(info, device, batch_size)
            with _MODELS_LOCK:
                _MODELS[key] = model
        return model


def loaded_shared(info: ModelInfo, device: str, batch_size: int, in_child: bool) -> Any:
    """The shared model if some engine of this process has loaded it, else None (never loads)."""
    with _MODELS_LOCK:
        return _MODELS.get(_model_key(info, device, batch_size, in_child))


def release_shared(model: Any) -> None:
    """Forget a shared model that is being closed, so the next caller loads a fresh one."""
    with _MODELS_LOCK:
        for key in [k for k, v in _MODELS.items() if v is model]:
            del _MODELS[key]


def nvidia_gpu() -> bool:
    """Whether the machine has an NVIDIA GPU with its driver loaded, known without importing torch."""
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        return gpus.is_dir() and any(gpus.iterdir())
    except OSError:
        return False


class Models:
    """One engine's full model and static tier (see the module). ``embedder`` may be injected
    (any object with ``name``, ``dim``, ``encode`` and ``encode_query``); ``in_child`` runs the
    full model in a child process (the interactive apps); ``note`` hears what happened in one line."""

    def __init__(
        self,
        settings: Settings,
        info: ModelInfo,
        embedder: Any = None,
        *,
        in_child: bool = False,
        note: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.settings = settings
        self.info = info
        self.loaded: Any = embedder  # the full model, once loaded (or injected)
        self.injected = embedder is not None
        self.in_child = in_child
        self.note = note
        self.error: str | None = None  # why the full model could not load (tried once)
        self.static_error: str | None = None  # why the static tier could not be had (tried once)
        self._lock = threading.Lock()
        self._static_lock = threading.Lock()
        self._static_cache: tuple[str, StaticIndex] | None = None  # (static_version, its vectors)

    # --- the full model -------------------------------------------------------------------------
    def embedder(self) -> Any:
        """The full model, loaded on first need and shared with every engine of this process that
        uses the same one (thread-safe). Raises ``CodeSightError`` if it can't load."""
        if self.loaded is not None:
            return self.loaded
        with self._lock:
            if self.loaded is None:
                if self.error:
                    raise CodeSightError(self.error)
                try:
                    self.loaded = shared_embedder(
                        self.info, self.settings.device, self.settings.batch_size, self.in_child
                    )
                except CodeSightError as exc:
                    self.error = str(exc)
                    raise
        return self.loaded

    def borrow(self) -> Any:
        """The full model if this engine, or another of this process, has loaded it; never loads."""
        if self.loaded is None:
            self.loaded = loaded_shared(self.info, self.settings.device, self.settings.batch_size, self.in_child)
        return self.loaded

    def gpu_likely(self) -> bool:
        """Whether the full model runs (or will run) on a CUDA GPU, known without importing torch:
        the configured device, the loaded model's, or an NVIDIA driver on the machine."""
        if self.info.backend.startswith("onnx"):
            return False  # the ONNX exports run on the CPU
        if self.settings.device != "auto":
            return bool(self.settings.device == "cuda")
        if self.loaded is not None:
            return bool(getattr(self.loaded, "device", "cpu") == "cuda")
        return nvidia_gpu()

    def full_pass(self) -> bool:
        """Whether index runs embed every chunk with the full model by default (``full_model``):
        'on'; or 'auto' where the model runs on a GPU, was handed in by the caller (to be used), or
        is the only semantic tier (the static one is off). On a CPU the answer stays BM25 + the
        static tier, and the full pass is one setting away."""
        choice = self.settings.full_model
        return choice == "on" or (
            choice == "auto" and (self.injected or self.gpu_likely() or self.static_path() is None)
        )

    # --- what the full pass costs here ------------------------------------------------------------
    def full_rate(self) -> float:
        """Chunks a second the full model embeds on this machine: the last full run's rate where one
        was measured (``record_full_rate``), else ``FULL_RATE``, this project's CPU under load."""
        try:
            rate = float((self.settings.cache_dir.expanduser() / RATE_FILE).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return FULL_RATE
        return rate if rate > 0 else FULL_RATE

    def record_full_rate(self, chunks: int, seconds: float) -> None:
        """Keep the rate of a full run that embedded enough to say (``full_rate``)."""
        if chunks < 64 or seconds <= 0:
            return
        path = self.settings.cache_dir.expanduser() / RATE_FILE
        with contextlib.suppress(OSError):
            from codesight_tui.core.private import private_dir

            private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(f"{chunks / seconds:.2f} chunks/s, {chunks} chunks in {seconds:.1f} s\n")

    def full_estimate(self, pending: int) -> str:
        """How long the full model's vectors of ``pending`` chunks take here, in words: what
        ``index --full`` is said to cost."""
        seconds = pending / self.full_rate()
        if seconds < 90:
            return f"about {max(1, round(seconds))} s"
        if seconds < 5400:
            return f"about {round(seconds / 60)} min"
        return f"about {seconds / 3600:.1f} h"

    def release(self) -> None:
        """End a model running in a child process (at once, even mid-batch, or still loading)."""
        if not self.in_child:
            return
        from codesight_tui.core.index.embedder import stop_starting

        stop_starting()
        if self.loaded is not None and hasattr(self.loaded, "close"):
            release_shared(self.loaded)
            self.loaded.close()

    # --- the static tier ------------------------------------------------------------------------
    def static_path(self) -> Path | None:
        """The static model's folder: the one shipped in the package (``static_model = "auto"``
        with the bundled full model), distilled from the full model (``auto`` otherwise, or
        ``distilled``), a configured model2vec folder, or None when the tier is off (or the model
        was injected)."""
        value = str(self.settings.static_model or "auto").strip()
        if value.lower() == "off":
            return None
        if value.lower() in ("auto", "distilled"):
            if self.injected:
                return None
            from codesight_tui.core.index.static import distilled_dir, packaged_model

            shipped = packaged_model(self.info.name) if value.lower() == "auto" else None
            return shipped or distilled_dir(self.settings.cache_dir, self.info.name, self.info.load_from)
        return Path(value).expanduser()

    def static_model(
        self,
        *,
        create: bool = False,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
        report: IndexReport | None = None,
        _repair: bool = True,
    ) -> StaticEmbedder | None:
        """The static model, or None where the tier is off or its model is not there. With
        ``create`` an ``auto`` model is distilled first if it is missing (once per machine;
        minutes on a CPU). Raises ``CodeSightError`` if it can't be had."""
        from codesight_tui.core.index import static

        path = self.static_path()
        if path is None:
            return None
        # "auto" and "distilled" distil what is missing; the shipped model is never remade
        auto = str(self.settings.static_model).strip().lower() in ("auto", "distilled") and path != static.PACKAGED_DIR
        if not static.is_model_dir(path):
            if not create:
                return None
            if not auto:
                raise UsageError(f"no model2vec model at {path} (static_model)")
            if progress:
                progress(Progress("distill", 0, 1, "distilling the static model (once per machine)"))
            seconds = static.distill(Path(self.info.load_from), path, cancel=cancel)
            if report is not None:
                report.distill_seconds = seconds
            if progress:
                progress(Progress("distill", 1, 1, "static model ready"))
        try:
            return static.load(path)
        except CodeSightError:
            if not (create and _repair and auto):
                raise
        # A distilled model that no longer loads (a truncated file, a disk error) is ours to
        # remake: set it aside and distil it again, once.
        import shutil

        broken = path.with_name(f"{path.name}.broken-{time.time_ns()}")
        with contextlib.suppress(OSError):
            path.rename(broken)
        shutil.rmtree(broken, ignore_errors=True)
        self.note(f"the static model at {path} was damaged; distilled it again")
        return self.static_model(create=True, progress=progress, cancel=cancel, report=report, _repair=False)

    def index_static(
        self, store: Store, progress: ProgressFn | None, cancel: threading.Event | None, report: IndexReport
    ) -> None:
        """Static vectors for every chunk without one; a tier that can't be had is a warning,
        told once per process (the lexical index and the full model go on without it)."""
        if self.static_error is not None:
            return
        try:
            model = self.static_model(create=True, progress=progress, cancel=cancel, report=report)
        except CodeSightError as exc:
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                return
            self.static_error = str(exc)
            report.warnings.append(f"{exc}; no static tier")
            return
        if model is not None:
            index_static(store, model, progress=progress, cancel=cancel, report=report)

    def static_index(self, store: Store) -> tuple[StaticIndex, float] | None:
        """``(StaticIndex, coverage)`` of an index's static vectors for search, or None where
        there are none or they came from another static model. Cached until they change."""
        if self.static_error is not None:
            return None
        try:
            version = store.get_meta("static_version")
            if not version:
                return None
            with self._static_lock:
                cached = self._static_cache
                if cached is None or cached[0] != version:
                    model = self.static_model()
                    if model is None or model.name != store.get_meta("static_model"):
                        return None
                    from codesight_tui.core.index.static import StaticIndex

                    ids, matrix = store.static_matrix(model.dim)
                    cached = self._static_cache = (
                        version,
                        StaticIndex(model, ids, matrix, *store.static_matrix(model.dim, docs=True)),
                    )
            index = cached[1]
            if not len(index):
                return None
            # Chunks newer than the last static vector have none yet (a static pass goes by id).
            newer = int(
                store.conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (int(index.ids[-1]),)).fetchone()[0]
            )
            return index, len(index) / (len(index) + newer)
        except CodeSightError as exc:
            self.static_error = str(exc)
            return None
        except sqlite3.Error:
            return None

    def static_status(self, store: Store, chunks: int) -> dict[str, Any]:
        try:
            n = store.static_count()
        except sqlite3.Error:  # an index from before the static tier, opened read-only
            n = 0
        path = self.static_path()
        return {
            "static_model": str(path) if path else None,
            "static_vectors": n,
            "static_coverage": round(n / chunks, 4) if chunks else 1.0,
            "static_error": self.static_error,
        }


def static_model_path(settings: Settings, info: Any, say: Callable[[str], None] | None = None) -> Path:
    """The static model a fleet store uses: the configured model2vec folder, else the one distilled
    from the full model (distilled here first if this machine has none; ``off`` turns off the
    local tier, not the fleet's)."""
    from codesight_tui.core.index.static import distill, distilled_dir, is_model_dir

    # The fleet keeps the distilled table, whatever "auto" means locally: a store records only the
    # full model's name, and a new table would mix two kinds of static vectors in one store.
    value = str(settings.static_model or "auto").strip()
    if value.lower() not in ("auto", "off", "distilled"):
        path = Path(value).expanduser()
        if not is_model_dir(path):
            raise UsageError(f"no model2vec model at {path} (static_model)")
        return path
    path = distilled_dir(settings.cache_dir, info.name, info.load_from)
    if not is_model_dir(path):
        if say is not None:
            say("distilling the static model (once per machine)")
        distill(Path(info.load_from), path)
    return path


def model_info(settings: Settings) -> Any:
    """The full model ``settings`` name, with the backend it runs on here."""
    from codesight_tui.core.index.onnx_model import for_backend
    from codesight_tui.core.ingest.tokens import resolve_model

    return for_backend(
        resolve_model(settings.embedding_model),
        settings.embedding_backend,
        settings.device,
        nvidia_gpu(),
        settings.cache_dir,
    )
