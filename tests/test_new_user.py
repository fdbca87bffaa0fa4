"""What a new user hit (issue 35), each reproduced first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codesight_tui import CodeSight
from conftest import build_repo


@pytest.mark.model
def test_nonsense_gets_no_results_from_the_static_tier_alone(tmp_path, static_model_dir, _isolated_home):
    """Item 5: `codesight search zzqqxxnonexistentword` returned ten files from the static tier with
    exit 0 (bm25 mode rightly exited 1). A static vector made of word pieces lands near everything."""
    repo = build_repo(tmp_path / "repo")
    cs = CodeSight(repo, static_model=str(static_model_dir), device="cpu")
    cs.index(embed=False, static=True)
    assert cs.static_ready()
    for nonsense in ("zzqqxxnonexistentword", "xkcd blorp fnord", "qwertyuiopasdf"):
        assert list(cs.search(nonsense, mode="hybrid", fast=True)) == [], nonsense
    assert cs.search("great circle distance between two points", mode="hybrid", fast=True)[0].path == "src/geo.py"
    env_cmd = [sys.executable, "-m", "codesight_tui", "search", "zzqqxxnonexistentword", "--path", str(repo)]
    r = subprocess.run(env_cmd, capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "CODESIGHT_STATIC_MODEL": str(static_model_dir)})
    assert r.returncode == 1 and "no results" in r.stderr and not r.stdout, (r.returncode, r.stdout, r.stderr)


def test_a_worker_whose_parent_died_while_it_started_exits(tmp_path):
    """Item 6: kill -9 during chunking left the resource tracker and two spawn workers alive for
    46 minutes. A spawned worker imports for a second or more; a parent killed meanwhile has handed
    it to init already, and the worker took init for its parent and waited for it to die."""
    code = ("import os, time; from codesight_tui.core.child import init_child;"
            " init_child(False, parent=os.getppid() + 1_000_000); time.sleep(30); print('still alive')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0 and "still alive" not in r.stdout
