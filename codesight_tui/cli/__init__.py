"""The command line: ``codesight [PATH]`` opens the TUI; ``index``, ``search``, ``status`` and the
rest script the same engine through the ``Workspace``. ``main`` parses and runs one call in this
process; ``run`` takes the call's ``Context`` (the warm service passes its client's streams).

  context.py   a call's streams, workspace and questions; one-line errors
  parser.py    the grammar: commands, options, help
  roots.py     where a call looks: repositories, a trailing path, the fleet store, the workspace
  printer.py   how answers are written: text, JSON, vimgrep lines, reports
  progress.py  index runs on the way: progress bars, the first index a search needs
  main.py      one call: parse, dispatch, errors and exit codes
  commands/    one module per command group
"""

from __future__ import annotations

from codesight_tui.cli.context import AskInClient, Context
from codesight_tui.cli.main import main, run

__all__ = ["AskInClient", "Context", "main", "run"]
