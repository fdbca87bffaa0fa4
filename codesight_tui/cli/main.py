"""One call of the command line: parse, pick the command's module (imported only when it runs,
so ``--help`` answers at once and lexical search never loads torch), run it in its ``Context``,
and turn every error into one line and an exit code."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, cast

from codesight_tui.cli.context import EXIT_OK, Context, Terminated, err, exit_code, using
from codesight_tui.cli.parser import COMMANDS, parser, tui_parser
from codesight_tui.core.errors import CodeSightError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import FrameType

    Command = Callable[[argparse.Namespace], int]

# Each command's module in codesight_tui.cli.commands and its function there.
HANDLERS = {
    "index": ("index", "cmd_index"),
    "watch": ("index", "cmd_watch"),
    "search": ("search", "cmd_search"),
    "related": ("search", "cmd_related"),
    "grep": ("grep", "cmd_grep"),
    "def": ("follow", "cmd_follow"),
    "refs": ("follow", "cmd_follow"),
    "callers": ("follow", "cmd_follow"),
    "callees": ("follow", "cmd_follow"),
    "ask": ("ask", "cmd_ask"),
    "status": ("status", "cmd_status"),
    "cache": ("status", "cmd_cache"),
    "stats": ("status", "cmd_stats"),
    "install": ("setup", "cmd_install"),
    "uninstall": ("setup", "cmd_install"),
    "service": ("setup", "cmd_service"),
    "mcp": ("setup", "cmd_mcp"),
    "eval": ("evaluate", "cmd_eval"),
    "fleet": ("fleet", "cmd_fleet"),
    "tui": ("tui", "cmd_tui"),
}
# Their own signal handling (the TUI's, the MCP server's), and what an interrupt leaves behind.
OWN_SIGNALS = ("tui", "mcp")
WHOLE_FILES = ("install", "uninstall", "stats", "service", "cache")


def handler(command: str) -> Command:
    """The function that runs ``command``, its module imported now."""
    module, name = HANDLERS[command]
    return cast("Command", getattr(importlib.import_module(f"codesight_tui.cli.commands.{module}"), name))


def main(argv: list[str] | None = None) -> int:
    """Run one command in this process (the console script is ``client.main``, which sends
    ``search`` and ``related`` to the warm service first)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(argv, signals=True)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def parse(argv: list[str]) -> argparse.Namespace:
    """A command's arguments. ``grep``'s paths may follow its flags, as rg's do (``codesight grep
    TODO -w src/``): argparse's positionals cannot be split around options, so the words left
    over are its paths."""
    if argv[0] != "grep":
        return parser().parse_args(argv)
    args, extra = parser().parse_known_args(argv)
    flags = [word for word in extra if word.startswith("-")]
    if flags:
        parser().error(f"unrecognized arguments: {' '.join(flags)}")
    args.paths = [*args.paths, *extra]
    return args


def run(argv: list[str], *, cwd: str | None = None, signals: bool = False, context: Context | None = None) -> int:
    """One command: its exit code, every error one line on stderr. ``cwd`` is the directory its
    relative paths are from (a served call's client's); ``signals`` turns SIGTERM and SIGHUP into
    the Ctrl-C path (only a main thread can); ``context``: the call's streams, workspace and
    whether it may ask (default: this process's)."""
    with using(context or Context()):
        if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
            args = parse(argv)
            command = args.command
        else:
            args = tui_parser().parse_args(argv)
            command = args.command = "tui"
        if command is None:
            parser().print_help()
            return EXIT_OK
        args.cwd = cwd
        if signals and command not in OWN_SIGNALS:
            import signal

            for sig in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, _raise_terminated)
        try:
            return handler(command)(args)
        except CodeSightError as exc:
            err(str(exc))
            return exc.exit_code
        except KeyboardInterrupt as exc:
            if command in WHOLE_FILES:
                err("interrupted: each file is written whole or not at all")
            else:
                err("interrupted: everything indexed so far is saved; run the same command to resume")
            return exit_code(exc)
        except BrokenPipeError:
            return EXIT_OK
