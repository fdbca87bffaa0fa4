"""codesight: local hybrid code search (BM25 + embeddings) with a terminal UI.

``from codesight_tui import CodeSight`` is the Python API; the import is lazy so that the CLI's
``--help`` and lexical search never load torch, lancedb or textual.
"""

# No import at run time, not even typing: `python -m codesight_tui` imports this package before
# __main__ takes a repository's own typing.py or json.py off sys.path. Type checkers read this
# name as true, and see the names below; at run time each is imported on first use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from codesight_tui.core.engine import CodeSight
    from codesight_tui.core.errors import CodeSightError
    from codesight_tui.core.fleet import Fleet
    from codesight_tui.core.process.jobs import IndexJob
    from codesight_tui.core.search.contract import Filters, SearchRequest, SearchResponse, SearchResult
    from codesight_tui.core.search.navigate import Navigation
    from codesight_tui.core.search.status import IndexStatus

__version__ = "0.1.0"
__all__ = [
    "CodeSight",
    "CodeSightError",
    "Filters",
    "Fleet",
    "IndexJob",
    "IndexStatus",
    "Navigation",
    "SearchRequest",
    "SearchResponse",
    "SearchResult",
    "__version__",
]


def __getattr__(name: str) -> object:
    if name == "CodeSight":
        from codesight_tui.core.engine import CodeSight

        return CodeSight
    if name == "Fleet":
        from codesight_tui.core.fleet import Fleet

        return Fleet
    if name == "CodeSightError":
        from codesight_tui.core.errors import CodeSightError

        return CodeSightError
    if name in ("SearchRequest", "SearchResponse", "SearchResult", "Filters"):
        from codesight_tui.core.search import contract

        return getattr(contract, name)
    if name == "Navigation":
        from codesight_tui.core.search.navigate import Navigation

        return Navigation
    if name == "IndexJob":
        from codesight_tui.core.process.jobs import IndexJob

        return IndexJob
    if name == "IndexStatus":
        from codesight_tui.core.search.status import IndexStatus

        return IndexStatus
    raise AttributeError(name)
