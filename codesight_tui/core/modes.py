"""The search modes, defined once for every surface (the CLI's choices, the TUI's Tab cycle, the
settings' default_mode, the engine's check)."""

from typing import Literal, get_args

Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[str, ...] = get_args(Mode)  # in the TUI's Tab order
