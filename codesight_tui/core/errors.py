"""Errors that carry a message meant for people, not a traceback."""


class CodeSightError(Exception):
    """A failure the user can act on; ``str(exc)`` is one readable line.

    ``exit_code`` follows sysexits loosely: 2 for bad input, 3 for a busy index, 1 otherwise.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CodeSightError):
    """What was asked cannot be done as asked (a bad argument, mode, path or pattern): exit 2, in
    every layer, from the engine up to the CLI."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


class IndexBusyError(CodeSightError):
    """Another process holds the index's writer lock."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=3)


class VectorStoreError(CodeSightError):
    """The vector table could not be read (missing or damaged files): BM25 still works, and the
    next index run rebuilds the vectors from the embedding cache."""


class NotHereError(UsageError):
    """What was asked names nothing in this repository (a path outside it, a file it does not
    index): where several repositories are asked, another one's more specific answer wins."""
