"""The fleet: one search over many repositories, in a store that any number of readers share.

``store`` holds the tables and searches them; ``job`` fills them (``codesight fleet index``);
``Fleet``, here, is the public face that the CLI, the TUI and MCP use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.fleet.store import FleetStore, RepoRecord, StoreSpec, explain

if TYPE_CHECKING:
    import numpy as np

    from codesight_tui.core.search.related import RelatedSource
    from codesight_tui.core.search.searcher import SearchResponse


@dataclass
class FleetModel:
    """What embeds queries (and chunks) for a store: its kind and the encoder."""

    kind: str
    name: str
    dim: int
    encoder: Any = field(repr=False, default=None)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encoder.encode_query(text)
        return vector

    def known_share(self, words: list[str]) -> float:
        share = getattr(self.encoder, "known_share", None)
        return float(share(words)) if share is not None else 1.0


_ENCODERS: dict[tuple[str, str], Any] = {}


class Fleet:
    """The fleet's public face: ``Fleet("s3://bucket/codesight", endpoint=...)`` indexes
    repositories into a store (``index``), lists them (``repos``) and searches them (``search``;
    ``CodeSight.search_many(..., fleet=)`` fuses it with local indexes)."""

    def __init__(self, uri: str, endpoint: str | None = None, settings: Any = None) -> None:
        from codesight_tui.core.config import load_settings

        self.settings = settings if settings is not None else load_settings()
        self.spec = StoreSpec(uri, endpoint or self.settings.fleet_endpoint)
        self.store = FleetStore(self.spec)

    def index(
        self,
        sources: list[str],
        *,
        model: str = "static",
        address: str | None = None,
        workers: int = 0,
        progress: Callable[[str], None] | None = None,
        local: bool = False,
        gpus: float = 0.0,
    ) -> Any:
        """Index git URLs, clones or directories of clones (``core.fleet.job.run``); a
        ``FleetReport``."""
        from codesight_tui.core.fleet import job  # deferred: git, the workers and the models, for writers only

        return job.run(
            sources,
            self.spec,
            self.settings,
            kind=model,
            address=address,
            workers=workers,
            progress=progress,
            local=local,
            gpus=gpus,
        )

    def repos(self) -> list[RepoRecord]:
        return self.store.repos()

    def remove(self, names: list[str]) -> list[str]:
        """Take repositories out of the store; the names that were there."""
        there = [r.name for r in self.store.repos() if r.name in set(names)]
        self.store.forget(there)
        self.store.finish()
        return there

    def find_source(self, target: str, repo: str | None = None) -> RelatedSource:
        """The chunk ``target`` (``path:line`` or a symbol) names in the store: the start of a
        "more like this" over the fleet (``FleetStore.find_source``)."""
        try:
            return self.store.find_source(target, repo)
        except CodeSightError:
            raise
        except Exception as exc:  # the object store unreachable, a credential refused, a table damaged  # noqa: BLE001
            raise explain(exc, self.spec, "search") from None

    def size_bytes(self) -> int | None:
        return self.store.size_bytes()

    def model(self) -> FleetModel:
        """The store's model, loaded here once per process (the static one distilled first if this
        machine has none yet)."""
        meta = self.store.meta()
        kind, dim = meta.get("kind", "static"), int(meta.get("dim", "0"))
        from codesight_tui.core.process.models import model_info, static_model_path

        info = model_info(self.settings)
        if meta.get("model") != info.name:
            raise UsageError(
                f"{self.spec.uri} was built with {meta.get('model')}, and this codesight has"
                f" {info.name}: set embedding_model to match"
            )
        key = (kind, info.name)
        encoder = _ENCODERS.get(key)
        if encoder is None:
            if kind == "static":
                from codesight_tui.core.index.static import load

                encoder = load(static_model_path(self.settings, info))
            else:
                from codesight_tui.core.index.embedder import in_process

                encoder = in_process(info, self.settings.device, self.settings.batch_size)
            _ENCODERS[key] = encoder
        if int(encoder.dim) != dim:
            raise UsageError(f"{self.spec.uri} holds {dim}-dimensional vectors, and this model makes {encoder.dim}")
        return FleetModel(kind, info.name, dim, encoder)

    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        *,
        repo: str | None = None,
        glob: str | None = None,
        language: str | None = None,
        like: RelatedSource | None = None,
    ) -> SearchResponse:
        """The fleet's ranked hits for ``query``; ``repo`` is a glob over repository names.
        ``like`` (from ``find_source`` or a local ``CodeSight.related_source``) searches for code
        like that chunk instead, as ``CodeSight.related`` does."""
        model = self.model() if mode != "bm25" else None
        try:
            return self.store.search(
                query,
                model.encode_query if model else None,
                top_k=top_k,
                mode=mode,
                repo=repo,
                glob=glob,
                language=language,
                depth=self.settings.retriever_depth,
                rrf_k=self.settings.rrf_k,
                known_share=model.known_share if model else None,
                like=like,
            )
        except CodeSightError:
            raise
        except Exception as exc:  # the object store unreachable, a credential refused, a table damaged  # noqa: BLE001
            raise explain(exc, self.spec, "search") from None
