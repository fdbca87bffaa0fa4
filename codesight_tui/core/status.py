"""The named shapes of what ``CodeSight.status()`` returns: typed dictionaries, so that the JSON
the CLI and MCP print is the dictionary itself and a reader's key is checked by mypy."""

from __future__ import annotations

from typing import Any, TypedDict


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


class IndexStatus(TypedDict, total=False):
    """An index's counts, model, freshness and size. ``root``, ``index_dir``, ``indexed``,
    ``files``, ``chunks``, ``vectors``, ``pending``, ``model``, ``backend``, ``static_vectors``,
    ``last_indexed``, ``changed``, ``index_bytes``, ``vector_coverage``, ``indexing`` and
    ``notices`` are always there; the rest once an index exists."""

    root: str
    index_dir: str
    indexed: bool
    files: int
    chunks: int
    vectors: int  # chunks with a vector of the full model
    pending: int  # chunks without one yet
    vector_coverage: float
    model: str
    backend: str  # how the full model runs here: torch, onnx or onnx-int8 (core.onnx_model)
    dim: int | None
    last_indexed: float | None  # seconds since the epoch
    git_head: str | None
    index_bytes: int
    db_bytes: int
    vector_bytes: int
    vector_versions: int
    skipped: dict[str, int]  # files the last walk did not index, by reason
    secrets: SecretsStatus
    documents: DocumentsStatus
    read_only: bool
    static_model: str | None
    static_vectors: int
    static_coverage: float
    static_error: str | None
    indexing: bool  # a writer holds the index now (this process or another)
    notices: list[str]
    cache: dict[str, Any] | None  # the shared embedding cache's file, where it exists
    changed: int | None  # files changed on disk since the last run (None: not looked at)
    changed_files: ChangedFiles
