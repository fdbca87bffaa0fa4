"""The unit tier's rule is enforced (tests/conftest.py): no process of ours, no model."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import UnitTierBreach


def test_a_unit_test_cannot_start_a_process_or_load_a_model() -> None:
    with pytest.raises(UnitTierBreach, match="started a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    from codesight_tui.core.index import static

    with pytest.raises(UnitTierBreach, match="static model"):
        static.load(Path("anywhere"))
    assert subprocess.run(["git", "--version"], capture_output=True, check=False).returncode == 0  # git is allowed
