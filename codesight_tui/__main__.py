import os
import sys

# `python -m codesight_tui` puts the current directory first on sys.path. Inside a repository that
# holds a json.py or typing.py (rich does), those would shadow the standard library and break
# every command: drop that entry, unless this very package is what lives there (a source checkout).
# (Not in a worker process that re-imports this module as __mp_main__: its path is the parent's.)
_package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or os.curdir) != _package_parent:
    sys.path.pop(0)

from codesight_tui.client import main  # noqa: E402 - only once sys.path is safe (above)


def run_here(argv: list[str]) -> int:
    """The command in this process, where the service did not answer it."""
    from codesight_tui.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":  # guarded: worker processes (spawn) import this module again
    raise SystemExit(main(run_here))
