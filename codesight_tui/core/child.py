"""What every child process codesight starts needs: to die with its parent, to keep off a terminal
UI's screen, and (for multiprocessing) a resource tracker that starts under Textual."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time


def exit_with_parent(parent: int | None = None, every: float = 0.5) -> None:
    """A worker whose parent died (kill -9 leaves no one to shut the pool down) exits within
    ``every`` seconds: it is re-parented, so its parent pid changes. ``parent`` is the pid the
    parent gave (``os.getpid()`` there): a spawned child imports for a second or more before it
    gets here, and a parent killed meanwhile has already handed it to init, so asking
    ``os.getppid()`` now would take init for the parent and wait for it forever."""
    if parent is None:
        parent = os.getppid()
    elif os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="codesight-parent-watch", daemon=True).start()


def init_child(quiet: bool, parent: int | None = None) -> None:
    """Ctrl-C is the parent's to handle; exit with the parent (``parent``: its pid, as it gave
    it); and with ``quiet`` (the parent draws a terminal UI on the fds we inherited) never write
    over it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent)
    if quiet:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)


def has_stderr_fd() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        return False


def start_resource_tracker_quietly() -> None:
    """multiprocessing starts its resource tracker with our stderr's fd. Under Textual, stderr is
    a capture object without one, and the start fails ("bad value(s) in fds_to_keep"): start it
    with stderr on /dev/null instead (once per process; later pools reuse it)."""
    from multiprocessing import resource_tracker

    saved = sys.stderr
    with open(os.devnull, "w") as null:
        sys.stderr = null
        try:
            resource_tracker.ensure_running()
        finally:
            sys.stderr = saved


def quiet_for_children() -> bool:
    """Whether children must keep off our stdio (no real stderr: a terminal UI holds it); starts
    the resource tracker quietly where so."""
    quiet = not has_stderr_fd()
    if quiet:
        start_resource_tracker_quietly()
    return quiet
