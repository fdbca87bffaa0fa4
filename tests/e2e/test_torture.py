"""The fast subset of the torture harness (issues 22, 31 and 34): kill -9 at random moments,
storage faults, a hostile repository, fuzzed queries, resource limits (peak RSS of each probe), a
branch switch under `codesight watch`, and the warm service (concurrent calls, kill -9 mid-index,
a stale socket, another user), install/uninstall on hostile agent files and the fleet's probe
cases (issue 48), through real processes with the real model, with the repository
checked untouched and every network connection refused and counted. Two sections run at a time
(`python benchmarks/torture.py --fast --jobs 2 ...`)."""

import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "torture.py"


def test_torture_fast_subset(tmp_path: Path, static_model_dir: Path) -> None:
    env = {**os.environ, "CODESIGHT_STATIC_MODEL": str(static_model_dir)}  # the session's, not a new one
    r = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            "--fast",
            "--jobs",
            "2",
            "--only",
            "kill,faults,hostile,queries,limits,checkout,service,install,fleet",
            "--faults",
            "read-only,disk,garbage",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0 and "== 0 problems" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "repository entries changed by codesight: 0" in r.stdout
    assert "network connections attempted by any codesight process: 0" in r.stdout
    assert "install: 9 of 9 cases as intended" in r.stdout
