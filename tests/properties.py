"""How many examples a property test runs: each test's full count under the ``ci`` Hypothesis
profile (``CI`` set, as ``.ci/run`` sets it, or ``--hypothesis-profile=ci``), and a fifth of it, at
least 10, under ``dev``, the inner loop's profile (``tests/conftest.py`` registers both)."""

from __future__ import annotations

from hypothesis import settings


def examples(full: int) -> int:
    """``full`` under the ``ci`` profile; a short run of the same property under ``dev``."""
    return full if settings.get_current_profile_name() == "ci" else max(10, full // 5)
