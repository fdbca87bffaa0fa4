"""What one CLI call runs in (``Context``): the streams it writes to, the workspace its engines come
from, and whether it may ask its user a question. ``cli.run`` takes one; the warm service passes
its own for each client (the client's streams, its warm workspace), so no module global and no
process-wide ``sys.stdout`` stands between a served call and its client."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from codesight_tui.core.errors import UsageError

if TYPE_CHECKING:
    from codesight_tui.core.apps.workspace import Workspace

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130  # bad input is a UsageError (2), a busy index an IndexBusyError (3)


class Stream(Protocol):
    """Where a call's output goes: a terminal, a file, or a served call's client."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def _isatty(stream: object) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (OSError, ValueError):  # closed
        return False


@dataclass
class Context:
    """One call's streams (default: this process's), its ``workspace`` (the warm service's: engines
    kept between calls; None: one made for the call), and ``can_ask``: a served call whose client
    has a terminal hands a question back to it (``AskInClient``) rather than asking here.
    ``out_tty``/``err_tty`` say whether each stream is a terminal (colours, progress bars)."""

    out: Stream = field(default_factory=lambda: sys.stdout)
    err: Stream = field(default_factory=lambda: sys.stderr)
    workspace: Workspace | None = None
    can_ask: bool = False
    out_tty: bool | None = None
    err_tty: bool | None = None

    def __post_init__(self) -> None:
        if self.out_tty is None:
            self.out_tty = _isatty(self.out)
        if self.err_tty is None:
            self.err_tty = _isatty(self.err)

    @property
    def color(self) -> bool:
        """Colours on stdout: a terminal, and no ``NO_COLOR``."""
        return bool(self.out_tty) and not os.environ.get("NO_COLOR")


_CURRENT: ContextVar[Context | None] = ContextVar("codesight_cli_context", default=None)


def current() -> Context:
    """The context of the call running in this thread (``cli.run`` sets it), else this process's."""
    return _CURRENT.get() or Context()


@contextmanager
def using(context: Context) -> Iterator[Context]:
    """``context`` is the current one inside the ``with`` (in this thread: another thread that
    writes for the call, such as a watcher's, enters it itself)."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (an ssh session closed), raised in the main thread as Ctrl-C is, so the
    same clean-up runs: the index stops at a batch boundary, worker processes and the writer lock
    are released. The exit code is 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code(exc: KeyboardInterrupt) -> int:
    """The exit code of an interrupted call: 130 for Ctrl-C, 128 + the signal's number else."""
    return 128 + exc.signum if isinstance(exc, Terminated) else EXIT_INTERRUPTED


class AskInClient(Exception):
    """A served call that must ask its user a question: the service hands it back, and the client
    runs it in its own process, where the terminal is."""


def safe(text: str) -> str:
    """Text from file names and contents, with control characters shown as ``?``: an escape
    sequence in a file must never drive the user's terminal."""
    from codesight_tui.core.text import printable

    return printable(text)


def say(*parts: object, end: str = "\n", flush: bool = False) -> None:
    """``print`` to the call's stdout."""
    print(*parts, end=end, file=current().out, flush=flush)


def err(msg: str) -> None:
    """One line on the call's stderr: a newline inside the message (a name given as ``$'a\\nb'``) is
    shown as ``\\n``."""
    try:
        print(f"codesight: {safe(msg).replace(chr(10), chr(92) + 'n')}", file=current().err)
    except OSError:  # the terminal is gone (SIGHUP from a closed ssh session): nobody to tell
        pass


def confirm(question: str, *, no_terminal: str, declined: str) -> None:
    """Ask ``question`` on the terminal (a served call hands it back to its client); returns on
    yes, else a ``UsageError``: ``no_terminal`` where there is none to ask on, ``declined`` on no."""
    ctx = current()
    if ctx.can_ask:
        raise AskInClient(question)
    if not (sys.stdin.isatty() and ctx.err_tty):
        raise UsageError(no_terminal)
    ctx.err.write(question + " [y/N] ")
    ctx.err.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, KeyboardInterrupt):
        answer = ""
    if answer not in ("y", "yes"):
        raise UsageError(declined)
