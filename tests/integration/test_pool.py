"""core.pool: the fleet's local workers (issue 48, item 2): results and errors as they come, a
task whose worker dies run again, workers kept between tasks, nothing left running."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.store.pool import MAX_RETRIES, run_tasks


def work(task: tuple[str, str]) -> object:
    kind, arg = task
    if kind == "pid":
        return os.getpid()
    if kind == "raise":
        raise ValueError(arg)
    if kind == "refuse":
        raise CodeSightError(arg)
    if kind == "die-once":  # killed the first time (as by the OOM killer), fine the next
        marker = Path(arg)
        if not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)
        return "second try"
    if kind == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    return None


def run(
    tasks: list[tuple[str, str]], workers: int = 2
) -> tuple[dict[tuple[str, str], list[tuple[object, object]]], int]:
    got: dict[tuple[str, str], list[tuple[object, object]]] = {}
    n = run_tasks(work, tasks, workers, lambda t, out, err: got.setdefault(t, []).append((out, err)), preload=__name__)
    return got, n


def test_results_and_errors_come_back_once_each(tmp_path: Path) -> None:
    tasks = [("pid", str(i)) for i in range(6)] + [("raise", "bad input"), ("refuse", "no such commit")]
    got, n = run(tasks)
    assert n == 2 and set(got) == set(tasks) and all(len(v) == 1 for v in got.values())
    assert got[("raise", "bad input")] == [(None, "ValueError: bad input")]
    assert got[("refuse", "no such commit")] == [(None, "no such commit")]
    pids = {got[t][0][0] for t in tasks[:6]}
    assert len(pids) <= 2 and os.getpid() not in pids  # two workers, kept between tasks, never this process


def test_a_task_whose_worker_dies_runs_again_then_is_reported(tmp_path: Path) -> None:
    tasks = [("die-once", str(tmp_path / "m")), ("die", ""), ("pid", "a"), ("pid", "b")]
    got, _ = run(tasks)
    assert got[("die-once", str(tmp_path / "m"))] == [("second try", None)]
    assert got[("die", "")] == [(None, f"its worker was killed (SIGKILL), {MAX_RETRIES + 1} times")]
    assert isinstance(got[("pid", "a")][0][0], int) and isinstance(got[("pid", "b")][0][0], int)


def test_no_task_starts_no_worker_and_none_is_left() -> None:
    assert run([]) == ({}, 0)
    run([("pid", "x")], workers=4)
    import multiprocessing

    assert multiprocessing.active_children() == []
