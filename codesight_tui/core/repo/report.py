"""What ``CodeSight.status`` and its cheaper cousins say about one repository's index: counts,
model, freshness, size, what was skipped or masked, and what changed on disk since. Never loads
a model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from codesight_tui.core.repo.indexing import changed_files, full_pass

if TYPE_CHECKING:
    from codesight_tui.core.repo.context import RepoContext
    from codesight_tui.core.search.status import DocumentsStatus, IndexStatus, SecretsStatus
    from codesight_tui.core.store.store import Store


def counts(ctx: RepoContext) -> dict[str, int]:
    """``files``, ``chunks``, ``vectors`` and ``pending``; zeros before the first index."""
    if not ctx.has_index():
        return {"files": 0, "chunks": 0, "vectors": 0, "pending": 0}
    return ctx.store.counts()


def last_indexed(ctx: RepoContext) -> float | None:
    """When a lexical pass last completed (a Unix time), or None."""
    if not ctx.has_index():
        return None
    value = ctx.store.get_meta("last_indexed")
    return float(value) if value else None


def indexing_now(ctx: RepoContext) -> bool:
    """Whether an indexer (this process's or another's) is writing this index now."""
    return ctx.indexing.is_set() or ctx.storage.writer_active()


def cache_status(ctx: RepoContext) -> dict[str, Any] | None:
    """Stats of this model's cache file, if it exists (never creates one or loads the model)."""
    from codesight_tui.core.index.cache import EmbeddingCache

    path = ctx.cache_file(ctx.model_info.vectors_name)
    return EmbeddingCache.open_file(path).stats() if path is not None else None


def status(ctx: RepoContext, check_disk: bool = True) -> IndexStatus:
    """Counts, model, freshness and size of the index (``core.search.status.IndexStatus``)."""
    info = ctx.model_info
    base: dict[str, Any] = {
        "root": str(ctx.root),
        "index_dir": str(ctx.index_dir),
        "indexed": ctx.has_index(),
        "backend": info.backend,
        "indexing": indexing_now(ctx),
    }
    if not ctx.has_index():
        return cast(
            "IndexStatus",
            {
                **base,
                "files": 0,
                "chunks": 0,
                "vectors": 0,
                "pending": 0,
                "model": info.vectors_name,
                "static_vectors": 0,
                "last_indexed": None,
                "changed": None,
                "index_bytes": 0,
                "vector_coverage": 0.0,
                "notices": [],
            },
        )
    store = ctx.store
    meta = store.meta()
    n = store.counts()
    chunks = n["chunks"]
    static = ctx.models.static_status(store, chunks)
    out: IndexStatus = {
        "root": base["root"],
        "index_dir": base["index_dir"],
        "indexed": True,
        "backend": info.backend,
        "files": n["files"],
        "chunks": chunks,
        "vectors": n["vectors"],
        "pending": n["pending"],
        "model": meta.get("model") or info.vectors_name,
        "dim": int(meta["dim"]) if meta.get("dim") else None,
        "last_indexed": float(meta["last_indexed"]) if meta.get("last_indexed") else None,
        "git_head": meta.get("git_head") or None,
        "index_bytes": store.size_bytes() + ctx.vectors.size_bytes(),
        "db_bytes": store.size_bytes(),
        "vector_bytes": ctx.vectors.size_bytes(),
        "vector_versions": _vector_versions(ctx),
        "skipped": store.skipped(),
        "secrets": _secrets(store),
        "documents": cast("DocumentsStatus", store.document_status()),
        "read_only": store.readonly,
        "static_model": static["static_model"],
        "static_vectors": static["static_vectors"],
        "static_coverage": static["static_coverage"],
        "static_error": static["static_error"],
        "vector_coverage": round(n["vectors"] / chunks, 4) if chunks else 1.0,
        "full_pass": full_pass(ctx),
        "full_estimate": ctx.models.full_estimate(n["pending"]),
        "indexing": base["indexing"],
        "notices": ctx.notices.take("status")
        + (["index is read-only: searching without updating"] if store.readonly else []),
        "changed": None,
    }
    try:
        out["cache"] = cache_status(ctx)
    except Exception:  # a damaged or locked cache file: the status says none rather than fail  # noqa: BLE001
        out["cache"] = None
    if check_disk:
        ch = changed_files(ctx)
        out["changed"] = len(ch["added"]) + len(ch["modified"]) + len(ch["deleted"])
        out["changed_files"] = ch
    return out


def _secrets(store: Store) -> SecretsStatus:
    """Files never read because they are named like secrets, and secrets masked in the rest."""
    masked = store.masked()
    return {
        "files_skipped": store.skipped().get("secret", 0),
        "masked": masked["secrets"],
        "files_masked": masked["files"],
    }


def _vector_versions(ctx: RepoContext) -> int:
    """LanceDB versions kept on disk (0 before any vector; never raises)."""
    if not ctx.vectors.directory.exists():
        return 0
    try:
        return int(ctx.vectors.version_count())
    except Exception:  # a half-written or damaged table: a count is not worth a failed status  # noqa: BLE001
        return 0
