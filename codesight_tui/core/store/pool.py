"""Tasks on worker processes of this machine, with no network listener: what a local Ray gave the
fleet job (workers that keep their models between tasks, a task run again when its worker dies,
results as they come), without Ray's servers, which listen on every interface (issue 48, item 2).

The workers come from a fork server (a fresh interpreter that imports the task's module once, then
forks each worker), never from this process, which holds LanceDB's threads. Each worker talks to
this process over its own pipe; the fork server's socket sits in a private (0700) temporary
directory. A worker dies with its parent (``PR_SET_PDEATHSIG``), so a driver killed outright
leaves nothing running. ``ps`` names a worker ``codesight-task`` while it runs a task and
``codesight-idle`` between tasks.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

from codesight_tui.core.errors import CodeSightError

T = TypeVar("T")
R = TypeVar("R")

MAX_RETRIES = 3  # times a task is run again after its worker died (killed, out of memory), as Ray's max_retries
BUSY, IDLE = b"codesight-task", b"codesight-idle"
_PR_SET_PDEATHSIG, _PR_SET_NAME = 1, 15


def _prctl(option: int, value: Any) -> None:
    """Linux's prctl, where there is one (elsewhere a worker keeps its name and outlives a killed
    parent until its pipe closes)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _worker(conn: Connection, fn: Callable[[Any], Any]) -> None:
    """A worker's loop: a task from the pipe, ``("ok", result)`` or ``("error", why)`` back, until
    the pipe closes or says ``None``."""
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle: it stops us
    while True:
        _prctl(_PR_SET_NAME, IDLE)
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        _prctl(_PR_SET_NAME, BUSY)
        try:
            reply: tuple[str, Any] = ("ok", fn(task))
        except CodeSightError as exc:
            reply = ("error", str(exc))
        except Exception as exc:  # a task's failure is reported as its result, as Ray does; the worker goes on  # noqa: BLE001
            reply = ("error", f"{type(exc).__name__}: {exc}"[:300])
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return
        except Exception as exc:  # a result that does not pickle  # noqa: BLE001
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:300]))


@dataclass
class _Worker(Generic[T]):
    process: Any  # multiprocessing's SpawnProcess (its type is private)
    conn: Connection
    task: tuple[T, int] | None = None  # the task it runs, and how many times it ran before


def _died(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"its worker was killed ({signal.Signals(-code).name})"
    return f"its worker exited (status {code})"


def run_tasks(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    workers: int,
    done: Callable[[T, R | None, str | None], None],
    *,
    preload: str | None = None,
) -> int:
    """Run ``fn(task)`` for each task on up to ``workers`` processes, calling ``done(task, result,
    None)`` or ``done(task, None, why)`` in this process as each ends. ``fn`` must be a module-level
    function; ``preload`` names the module that the fork server imports once for every worker. A
    task whose worker dies is run again, up to ``MAX_RETRIES`` times; an exception it raises is
    its result. Returns the number of workers."""
    queue: deque[tuple[T, int]] = deque((t, 0) for t in tasks)
    if not queue:
        return 0
    slots = max(1, min(workers, len(queue)))
    ctx = multiprocessing.get_context("forkserver")
    if preload:
        ctx.set_forkserver_preload([preload])
    pool: list[_Worker[T]] = []

    def start() -> _Worker[T]:
        ours, theirs = ctx.Pipe()
        process = ctx.Process(target=_worker, args=(theirs, fn), daemon=True, name="codesight-task")
        process.start()
        theirs.close()
        return _Worker(process, ours)

    try:
        while queue or any(w.task for w in pool):
            while queue and len(pool) < slots:
                pool.append(start())
            for w in pool:
                if w.task is None and queue:
                    w.task = queue.popleft()
                    w.conn.send(w.task[0])
            busy = [w for w in pool if w.task is not None]
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for w in busy:
                assert w.task is not None
                task, tries = w.task
                if w.conn in ready or w.conn.poll():
                    try:
                        kind, value = w.conn.recv()
                    except (EOFError, OSError):
                        pass  # it died while sending: as below
                    else:
                        w.task = None
                        if kind == "ok":
                            done(task, value, None)
                        else:
                            done(task, None, str(value))
                        continue
                elif w.process.sentinel not in ready:
                    continue
                w.process.join()
                w.conn.close()
                pool.remove(w)
                if tries < MAX_RETRIES:
                    queue.appendleft((task, tries + 1))
                else:
                    done(task, None, f"{_died(w.process)}, {tries + 1} times")
    finally:  # idle workers are told to stop; busy ones (Ctrl-C, an error here) are killed
        for w in pool:
            if w.task is None:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(None)
            else:
                w.process.kill()
        for w in pool:
            w.process.join(timeout=5)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
    return slots
