"""The fast subset of the torture harness (issue 22): kill -9 at random moments, storage faults,
a hostile repository and fuzzed queries, through real processes with the real model, with the
repository checked untouched and every network connection refused and counted. Two sections run
at a time (49 s on the 2-core CI machine; `python benchmarks/torture.py --fast --jobs 2 ...`)."""

import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "benchmarks" / "torture.py"


def test_torture_fast_subset(tmp_path, static_model_dir):
    env = {**os.environ, "CODESIGHT_STATIC_MODEL": str(static_model_dir)}  # the session's, not a new one
    r = subprocess.run([sys.executable, str(HARNESS), "--fast", "--jobs", "2", "--only", "kill,faults,hostile,queries",
                        "--faults", "read-only,disk,garbage"],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "== 0 problems" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "repository entries changed by codesight: 0" in r.stdout
    assert "network connections attempted by any codesight process: 0" in r.stdout
