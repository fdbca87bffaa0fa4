"""What a new user hit (issue 35), each reproduced first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from conftest import build_repo

from codesight_tui import CodeSight
from codesight_tui.core.modes import Vectors


@pytest.mark.model
def test_nonsense_gets_no_results_from_the_static_tier_alone(
    tmp_path: Path, static_model_dir: Path, _isolated_home: Path
) -> None:
    """Item 5: `codesight search zzqqxxnonexistentword` returned ten files from the static tier with
    exit 0 (bm25 mode rightly exited 1). A static vector made of word pieces lands near everything."""
    repo = build_repo(tmp_path / "repo")
    cs = CodeSight(repo, static_model=str(static_model_dir), device="cpu")
    cs.index(embed=False, static=True)
    assert cs.static_ready()
    for nonsense in ("zzqqxxnonexistentword", "xkcd blorp fnord", "qwertyuiopasdf"):
        assert list(cs.search(nonsense, mode="hybrid", vectors=Vectors.STATIC)) == [], nonsense
    assert (
        cs.search("great circle distance between two points", mode="hybrid", vectors=Vectors.STATIC)[0].path
        == "src/geo.py"
    )
    env_cmd = [sys.executable, "-m", "codesight_tui", "search", "zzqqxxnonexistentword", "--path", str(repo)]
    r = subprocess.run(
        env_cmd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "CODESIGHT_STATIC_MODEL": str(static_model_dir)},
    )
    assert r.returncode == 1 and "no results" in r.stderr and not r.stdout, (r.returncode, r.stdout, r.stderr)


def test_a_worker_whose_parent_died_while_it_started_exits(tmp_path: Path) -> None:
    """Item 6: kill -9 during chunking left the resource tracker and two spawn workers alive for
    46 minutes. A spawned worker imports for a second or more; a parent killed meanwhile has handed
    it to init already, and the worker took init for its parent and waited for it to die."""
    code = (
        "import os, time; from codesight_tui.core.child import init_child;"
        " init_child(False, parent=os.getppid() + 1_000_000); time.sleep(30); print('still alive')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0 and "still alive" not in r.stdout


def test_quit_is_prompt_while_the_model_is_still_loading(repo: Path, tmp_path: Path) -> None:
    """Item 2: Ctrl+C took 28-38 s on a blank screen while the model loaded: the app's event loop
    ended with asyncio.run(), which joins every thread worker, and one was waiting for the model.
    Here the model never finishes loading (its weights are a FIFO nobody writes)."""
    import os
    import pty
    import select
    import shutil
    import time

    from codesight_tui.core.ingest.tokens import resolve_model

    model = tmp_path / "model"
    shutil.copytree(resolve_model("minilm").load_from, model, ignore=shutil.ignore_patterns("model.safetensors"))
    os.mkfifo(model / "model.safetensors")
    (repo / "src" / "loop").unlink()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the TUI on a real terminal
        os.environ.update(
            TERM="xterm-256color",
            COLUMNS="80",
            LINES="24",
            CODESIGHT_EMBEDDING_MODEL=str(model),
            CODESIGHT_STATIC_MODEL="off",
        )
        os.execv(sys.executable, [sys.executable, "-m", "codesight_tui", str(repo)])
    out = b""

    def read(seconds: float) -> None:
        nonlocal out
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    out += os.read(fd, 1 << 16)
                except OSError:
                    return

    read(6)  # the lexical phase is done; the model is loading, and will never be done
    assert b"lexical ready" in out or b"files" in out, out[-300:]
    t0 = time.monotonic()
    os.write(fd, b"\x03")  # Ctrl+C
    status = None
    while time.monotonic() - t0 < 20 and status is None:
        read(0.1)
        done, st = os.waitpid(pid, os.WNOHANG)
        status = st if done else None
    took = time.monotonic() - t0
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    left = subprocess.run(["pgrep", "-f", str(model)], capture_output=True, text=True).stdout.split()
    for p in left:
        os.kill(int(p), 9)
    assert status is not None and took < 3, f"quit took {took:.1f} s"
    assert not left, "the loading model process was left behind"


def test_several_repositories_come_in_the_order_of_the_scores_shown() -> None:
    """Item 7: results of several repositories came out of score order (each kept its own
    repository's score while the list was in the order of the fusion across them)."""

    from codesight_tui.core.repo.retrieval import Several
    from codesight_tui.core.search.contract import RepoSearcher, SearchRequest, SearchResponse, SearchResult
    from codesight_tui.core.search.related import RelatedSource

    def hit(path: str, score: float) -> SearchResult:
        return SearchResult(path, 1, 2, "", "python", score, 1, None, "x", 1, False)

    class Repo:
        def __init__(self, root: str, hits: list[SearchResult]) -> None:
            self.root, self._hits = root, hits

        def search(self, request: SearchRequest) -> SearchResponse:
            return SearchResponse(list(self._hits))

        def related_source(self, target: str) -> RelatedSource:
            raise AssertionError("no 'more like this' here")

    engines = [Repo("/a", [hit("a1.py", 0.9), hit("a2.py", 0.85)]), Repo("/b", [hit("b1.py", 0.3)])]
    found = Several(cast("list[RepoSearcher]", engines)).search(SearchRequest("q"))  # anything with root and search
    assert [h.path for h in found] == ["a1.py", "b1.py", "a2.py"]  # one from each repository first
    scores = [h.score for h in found]
    assert scores == sorted(scores, reverse=True), scores


def test_the_readme_installs_users_as_a_regular_package() -> None:
    """Issue 48 item 20: the run command is a regular install (an editable one adds setuptools'
    finder to every start-up: 13.6 ms of a 42 ms served search); the test command may stay -e."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    run = next(line for line in readme.splitlines() if "pip install" in line and "codesight /path/to/repo" in line)
    assert " -e " not in run and run.rstrip().endswith("codesight /path/to/repo")


@pytest.mark.model
def test_a_static_model_states_its_own_relevance_floor(
    tmp_path: Path, static_model_dir: Path, _isolated_home: Path
) -> None:
    """Issue 49: a static table trained for retrieval scores a question's best hit near 0.15, not
    0.5, so the distilled table's floor (0.3) dropped every answer with no word of the code; the
    model folder's config.json says its own floor (the trainer sets it), and the search uses it."""
    import json
    import shutil

    from codesight_tui.core.fusion import STATIC_RELEVANCE_FLOOR
    from codesight_tui.core.index.static import StaticEmbedder

    assert StaticEmbedder(static_model_dir).relevance_floor == STATIC_RELEVANCE_FLOOR  # none stated: the default
    repo = build_repo(tmp_path / "repo")
    question = "spherical trigonometry across the globe"  # no word of the fixture's code
    for floor, answered in ((0.99, False), (0.0, True)):
        model = tmp_path / f"model-{floor}"
        shutil.copytree(static_model_dir, model)
        config = json.loads((model / "config.json").read_text()) | {"relevance_floor": floor}
        (model / "config.json").write_text(json.dumps(config))
        cs = CodeSight(repo, static_model=str(model), device="cpu", data_dir=tmp_path / f"data-{floor}")
        cs.index(embed=False, static=True)
        assert list(cs.search(question, mode="bm25")) == []
        hits = list(cs.search(question, mode="hybrid", vectors=Vectors.STATIC))
        cs.close()
        assert bool(hits) == answered, (floor, [h.path for h in hits])
