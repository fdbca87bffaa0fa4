"""What one repository's index is made of: the parts ``CodeSight`` composes, and that its index
runs (``core.repo.indexing``), its searches (``core.repo.retrieval``) and its reports (``core.repo.report``)
share. Made once per engine; nothing here does work of its own but find its files."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.storage import IndexStorage
    from codesight_tui.core.ingest.tokens import ModelInfo
    from codesight_tui.core.process.models import Models
    from codesight_tui.core.search.status import Notices
    from codesight_tui.core.store.store import Store
    from codesight_tui.core.store.vectors import VectorStore
    from codesight_tui.core.store.watch import ChangeSource


@dataclass(eq=False)
class RepoContext:
    """One repository's index: where it is, how it is configured, its storage, its models, its
    notices, and the options its engine was made with (fixed for its life)."""

    root: Path
    settings: Settings
    index_dir: Path
    storage: IndexStorage
    models: Models
    model_info: ModelInfo
    notices: Notices
    lexical_processes: bool = False  # chunk big change sets in worker processes
    resident_bm25: bool = False  # BM25 answered from memory (core.store.lexical)
    indexing: threading.Event = field(default_factory=threading.Event)  # this process's writer runs
    # The embedding cache opened for a search's lookups (tried once; core.repo.retrieval.vectors_for).
    search_cache: EmbeddingCache | None = None
    search_cache_tried: bool = False
    # Watchers that index each batch as they take it (core.repo.indexing.watch): what they have seen
    # and not indexed yet is what exact search reads from disk (unindexed).
    watchers: weakref.WeakSet[ChangeSource] = field(default_factory=weakref.WeakSet)

    @property
    def store(self) -> Store:
        return self.storage.store

    @property
    def vectors(self) -> VectorStore:
        return self.storage.vectors

    def unindexed(self) -> set[str] | None:
        """The paths a running watcher has seen change and not indexed yet; None where no watcher
        knows (then every file's state on disk is asked)."""
        for w in list(self.watchers):
            if w.running:
                seen = w.unindexed()
                if seen is not None:
                    return seen
        return None

    def has_index(self) -> bool:
        return self.storage.exists()

    def is_indexed(self) -> bool:
        return self.has_index() and self.store.get_meta("last_indexed") is not None

    def exclude(self) -> list[str]:
        """The walk's extra patterns: the configured ones, and codesight's own data and cache
        directories wherever they lie inside the root (indexing a home directory): an index must
        never index itself, nor a watcher wake on its own writes."""
        out = list(self.settings.exclude)
        for own in (self.settings.data_dir, self.settings.cache_dir):
            try:
                rel = Path(own).expanduser().resolve().relative_to(self.root)
            except (ValueError, OSError):
                continue
            if rel.parts:
                out.append("/" + rel.as_posix().replace("[", "\\[") + "/")
        return out

    def cache_file(self, model: str | None) -> Path | None:
        """The existing embedding-cache file of ``model`` for this index's vector size, or None."""
        from codesight_tui.core.index.cache import cache_path

        dim = self.store.get_meta("dim") if self.has_index() else None
        if not model or not dim or not dim.isdigit():
            return None
        path = cache_path(self.settings.cache_dir, model, int(dim))
        return path if path.is_file() else None
