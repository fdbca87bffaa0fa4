"""codesight: local hybrid code search (BM25 + embeddings) with a terminal UI.

``from codesight_tui import CodeSight`` is the Python API; the import is lazy so that the CLI's
``--help`` and lexical search never load torch, lancedb or textual.
"""

__version__ = "0.1.0"
__all__ = ["CodeSight", "CodeSightError", "SearchResult", "__version__"]


def __getattr__(name: str):
    if name == "CodeSight":
        from codesight_tui.core.engine import CodeSight

        return CodeSight
    if name == "CodeSightError":
        from codesight_tui.core.errors import CodeSightError

        return CodeSightError
    if name == "SearchResult":
        from codesight_tui.core.searcher import SearchResult

        return SearchResult
    raise AttributeError(name)
