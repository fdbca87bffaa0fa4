"""The named shapes of what ``CodeSight.status()`` returns (typed dictionaries, so that the JSON
the CLI and MCP print is the dictionary itself and a reader's key is checked by mypy), and the
notices an index keeps for its readers."""

from __future__ import annotations

import threading
from typing import Any

from typing_extensions import NotRequired, TypedDict


class SecretsStatus(TypedDict):
    files_skipped: int  # files never read because their names say they hold secrets
    masked: int  # keys and tokens masked in the files that were read
    files_masked: int


class DocumentsStatus(TypedDict):
    indexed: int
    skipped: dict[str, str]  # path -> reason


class ChangedFiles(TypedDict):
    added: list[str]
    modified: list[str]
    deleted: list[str]


class IndexStatus(TypedDict):
    """An index's counts, model, freshness and size. The keys not marked ``NotRequired`` are there
    before the first index too; the rest once an index exists."""

    root: str
    index_dir: str
    indexed: bool
    files: int
    chunks: int
    vectors: int  # chunks with a vector of the full model
    pending: int  # chunks without one yet
    # whether index runs compute the rest (a GPU, full_model = on, or `index --full` asked once);
    # where not, ``full_estimate`` says what `index --full` would take here ("about 12 min")
    full_pass: NotRequired[bool]
    full_estimate: NotRequired[str]
    vector_coverage: float
    model: str
    backend: str  # how the full model runs here: torch, onnx or onnx-int8 (core.index.onnx_model)
    static_vectors: int
    last_indexed: float | None  # seconds since the epoch
    index_bytes: int
    indexing: bool  # a writer holds the index now (this process or another)
    notices: list[str]
    changed: int | None  # files changed on disk since the last run (None: not looked at)
    dim: NotRequired[int | None]
    git_head: NotRequired[str | None]
    db_bytes: NotRequired[int]
    vector_bytes: NotRequired[int]
    vector_versions: NotRequired[int]
    skipped: NotRequired[dict[str, int]]  # files the last walk did not index, by reason
    secrets: NotRequired[SecretsStatus]
    documents: NotRequired[DocumentsStatus]
    read_only: NotRequired[bool]
    static_model: NotRequired[str | None]
    static_coverage: NotRequired[float]
    static_error: NotRequired[str | None]
    cache: NotRequired[dict[str, Any] | None]  # the shared embedding cache's file, where it exists
    changed_files: NotRequired[ChangedFiles]


class Notices:
    """What happened to an index (rebuilt after damage, a format change, read-only), numbered, so
    that each reader tells each notice once: "answers" (searches and index runs, which share it:
    a notice an index run reported is not repeated by the search after it) or "status". A status
    call never takes the notice a search should have shown, even when both run at once (MCP's
    parallel calls)."""

    def __init__(self) -> None:
        self._events: list[tuple[int, str]] = []
        self._told: dict[str, int] = {}
        self._count = 0
        self._lock = threading.Lock()

    def note(self, message: str) -> None:
        with self._lock:
            told = self._told.get("answers", 0)
            if any(m == message for n, m in self._events if n > told):
                return  # the same thing again before it was told (a retried open): told once
            self._count += 1
            self._events.append((self._count, message))
            del self._events[:-64]  # the last 64 are plenty for any reader

    def take(self, reader: str = "answers") -> list[str]:
        """The notices this reader has not told yet."""
        with self._lock:
            told = self._told.get(reader, 0)
            self._told[reader] = self._count
            return [message for n, message in self._events if n > told]
