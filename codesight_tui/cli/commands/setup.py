"""``codesight install`` and ``uninstall`` (codesight as an MCP server of each coding agent),
``service`` (the warm per-user service: status, start, stop) and ``mcp`` (the server itself)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.cli.context import EXIT_ERROR, EXIT_OK, err, safe, say
from codesight_tui.cli.printer import tilde
from codesight_tui.cli.roots import fleet_of
from codesight_tui.core.errors import CodeSightError, UsageError

if TYPE_CHECKING:
    from codesight_tui.agents import Ledger, Plan


def _project(args: argparse.Namespace, names: list[str]) -> Path | None:
    """The repository ``--project`` names (None: the user's own configuration). ``install --project
    claude-code cursor``: --project takes an optional DIR, and argparse gives it the first agent's
    name; an agent's name that is no directory here is an agent (put back into ``names``)."""
    from codesight_tui import agents
    from codesight_tui.core.ingest.paths import find_repo_root

    if args.project is None:
        return None
    where = args.project
    if where.lower() in agents.BY_NAME and not Path(where).is_dir():
        names.insert(0, where)
        where = "."
    start = Path(where).expanduser()
    if not start.is_dir():
        raise UsageError(f"no such directory: {where}")
    return find_repo_root(start.resolve())


def _carry_out(plan: Plan, ledger: Ledger, note: str) -> bool:
    """Write one agent's changes and say what each did; False where a file could not be written."""
    from codesight_tui import agents

    done, written = [], True
    for c in plan.changes:
        try:
            backup = agents.apply(c, ledger)
        except OSError as exc:
            err(f"{plan.agent.name}: cannot write {tilde(c.path)}: {exc.strerror or exc}")
            written = False
            break
        if not c.changed:
            continue
        if c.restores and c.after is not None:
            what = "restored"
        elif c.after is None:
            what = "removed"
        else:
            what = "updated" if c.before is not None else "created"
        done.append(f"{what} {tilde(c.path)}" + (f" (first backup {tilde(backup)})" if backup else ""))
    say(f"{plan.agent.name}: " + "; ".join(done) + note)
    return written


def cmd_install(args: argparse.Namespace) -> int:
    """``install`` and ``uninstall``: plan each agent's change, then carry it out (or show it)."""
    from codesight_tui import agents
    from codesight_tui.core.config import Settings

    remove = args.command == "uninstall"
    env = dict(os.environ)
    names = list(args.agents)
    project = _project(args, names)
    chosen = agents.select(names, Path.home(), env, project)
    if not chosen:
        looked = ", ".join(a.name for a in agents.AGENTS)
        err(f"no coding agent found here (looked for {looked}): name one, e.g. codesight install claude-code")
        return EXIT_ERROR
    ledger = agents.Ledger(Path(Settings().data_dir).expanduser() / "installed.json")
    failed = touched = 0
    noted = False
    # One agent at a time, planned after the one before it was carried out: Codex and OpenCode
    # share AGENTS.md, and each must see what the other did to it.
    for a, _named in chosen:
        try:  # one agent's unreadable or unsafe file is said, and the others go on
            p = agents.plan(
                a, home=Path.home(), env=env, project=project, remove=remove, ledger=ledger, force=args.force
            )
        except CodeSightError as exc:
            err(f"{a.name}: {exc}")
            failed += 1
            continue
        noted = noted or bool(p.notes)
        note = "" if p.detected or remove else " (not found here; set up because you named it)"
        if project is not None and p.agent.project_config is None:
            say(f"{p.agent.name}: has no project configuration; nothing to do")
            continue
        for line in p.notes:
            say(f"{p.agent.name}: {tilde(line)}")
        if not p.changed:
            if not args.dry_run:
                for c in p.changes:  # the ledger learns which agents share a file no run had to change
                    agents.apply(c, ledger)
            if not p.notes:
                state = "not set up" if remove else "already set up"
                say(f"{p.agent.name}: {state} ({tilde(p.changes[0].path)}), nothing changed{note}")
            continue
        touched += 1
        if args.dry_run:
            say(f"{p.agent.name}: would change{note}")
            for c in p.changed:
                say(safe(c.diff()), end="")
        elif not _carry_out(p, ledger, note):
            failed += 1
    if not touched and not args.dry_run and not failed:
        say("nothing changed")
    if not remove and touched and not args.dry_run and not failed:
        say("restart the agent (or reload its MCP servers) to use codesight")
    return EXIT_ERROR if failed or noted else EXIT_OK


def cmd_service(args: argparse.Namespace) -> int:
    from codesight_tui import client

    def call(cmd: str) -> tuple[dict[str, Any] | None, str | None]:
        """``(status, None)`` from a running service, ``(None, why)`` where none answers."""
        got: dict[str, Any] = {}
        try:
            client.request(
                {"v": client.PROTOCOL, "install": client.install_key(), "env": client.env_digest(), "cmd": cmd},
                got.update,
            )
        except client.Unserved as exc:
            return None, str(exc)
        return got.get("status", {}), None

    try:
        log = client.service_file("log")
    except OSError as exc:  # e.g. the runtime directory is a link to another user's
        err(f'no runtime directory for the service: {exc} (fix it, or set service = "off")')
        return EXIT_ERROR
    if args.action == "stop":
        st, why = call("stop")
        if st is None:
            say(f"codesight service: not running ({why})")
            return EXIT_OK
        for _ in range(100):  # its socket goes once its engines are closed
            if not os.path.exists(client.socket_path()):
                break
            time.sleep(0.05)
        say("codesight service: stopped")
        return EXIT_OK
    if args.action == "start":
        if not client.enabled():
            raise UsageError('the service is off in the config (service = "off" or CODESIGHT_SERVICE=off)')
        if call("ping")[0] is None:
            client.start_service(wait=30.0)
    st, why = call("ping")
    if args.json:
        say(json.dumps({"running": True, **st} if st is not None else {"running": False, "why": why}, indent=2))
    elif st is None:
        say(f"codesight service: not running ({why})")
    else:
        say(
            f"codesight service: running, pid {st['pid']}, up {st['uptime_s']:.0f} s, {st['served']:,} calls"
            f" served; socket {st['socket']}"
        )
        idle = st["idle_exit_s"]
        say(f"  exits after {idle / 60:g} min without a call" if idle else "  never exits on its own")
        for r in st["repositories"]:
            say(f"  {r['root']}" + ("  (watching)" if r["watching"] else ""))
    if args.action == "start" and st is None:
        err(f"the service did not start: {why} (see {log})")
        return EXIT_ERROR
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from codesight_tui.mcp_server import serve

    return serve(args.root, watch=args.watch, fleet=fleet_of(args))
