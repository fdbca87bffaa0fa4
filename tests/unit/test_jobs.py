"""``core.jobs.IndexJob``: the background index loop the MCP server and the service share, on a
real index (SQLite, LanceDB) with the deterministic test embedder."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
from conftest import HashEmbedder, wait_for

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.index.indexer import Progress
from codesight_tui.core.process.jobs import BUSY_MESSAGE, IndexJob


class SlowEmbedder(HashEmbedder):
    """A batch takes a while, so that a run is still embedding when the test acts."""

    def encode(self, texts: list[str]) -> np.ndarray:
        time.sleep(0.2)
        return super().encode(texts)


def bulk(repo: Path, n: int = 60) -> None:
    for i in range(n):  # about 1,000 chunks: several embedding batches
        (repo / f"bulk_{i}.py").write_text("".join(f"def f_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(16)))


def test_a_run_reports_its_phases_and_a_second_start_reuses_it(repo: Path, settings: Settings) -> None:
    cs = CodeSight(repo, settings=settings, embedder=SlowEmbedder())
    bulk(repo)
    phases: list[str] = []
    job = IndexJob(cs, on_progress=lambda ev: phases.append(ev.phase))
    assert not job.running and job.lexical_done.is_set()
    assert job.start() is True
    assert job.start() is False  # one at a time: the caller is given the run that is going
    assert job.lexical_done.wait(30)
    assert cs.search("f_3_7", mode="bm25")  # BM25 answers as soon as the lexical phase commits
    assert job.wait(120)
    assert job.phase == "done" and job.error is None and job.runs == 1
    assert job.report is not None and job.report.vectors_pending == 0
    assert phases.index("lexical") < phases.index("embed")
    assert cs.counts()["pending"] == 0
    cs.close()


def test_requests_during_the_lexical_phase_are_merged_into_one_next_run(repo: Path, settings: Settings) -> None:
    cs = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    cs.index()
    gate = threading.Event()
    seen: list[str] = []

    def progress(ev: Progress) -> None:
        if ev.phase == "lexical":
            gate.wait(10)  # hold the first run in its lexical phase while two more requests come
        seen.append(ev.phase)

    job = IndexJob(cs, on_progress=progress)
    (repo / "a.py").write_text("def alpha_marker():\n    return 1\n")
    job.request(paths=["a.py"])
    assert wait_for(lambda: job.phase == "lexical")
    (repo / "b.py").write_text("def beta_marker():\n    return 2\n")
    (repo / "c.py").write_text("def gamma_marker():\n    return 3\n")
    job.request(paths=["b.py"])
    job.request(paths=["c.py"])
    gate.set()
    assert job.wait(60)
    assert job.runs == 2  # the first, and one run for both later requests
    for word in ("alpha_marker", "beta_marker", "gamma_marker"):
        assert cs.search(word, mode="bm25"), word
    cs.close()


def test_a_request_during_the_embedding_replaces_the_run_at_once(repo: Path, settings: Settings) -> None:
    cs = CodeSight(repo, settings=settings, embedder=SlowEmbedder())
    bulk(repo, 120)
    job = IndexJob(cs)
    job.start()
    assert wait_for(lambda: job.phase == "embed" and job.done > 0)
    (repo / "late.py").write_text("def saved_during_embedding():\n    return 1\n")
    t0 = time.monotonic()
    job.request(paths=["late.py"])
    # Searchable long before the first run's embedding would have ended (120 files: minutes here).
    assert wait_for(lambda: bool(cs.search("saved_during_embedding", mode="bm25")), 20)
    assert time.monotonic() - t0 < 10
    assert job.runs == 2
    job.cancel(wait=30)
    assert not job.running
    cs.close()


def test_another_writer_is_busy_not_a_failure(repo: Path, settings: Settings) -> None:
    from filelock import FileLock

    cs = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    cs.index()
    with FileLock(str(cs.index_dir / "write.lock")):  # another process's writer
        job = IndexJob(cs)
        job.start()
        assert job.wait(30)
        assert job.busy and job.error == BUSY_MESSAGE
        assert job.lexical_done.is_set() and not job.running
    cs.close()
