"""``codesight install`` / ``uninstall``: codesight's MCP server, and a few lines on when to use it,
in the configuration of the coding agents a user has.

Each agent's file is edited the way its owner would: the other entries, their order, the file's
indentation, line endings and comments stay (VS Code's JSON with comments is read as such); a file
that does not parse is refused, never rewritten; a read-only file is left alone; a file is
replaced atomically (a temporary file, then a rename, through a symlinked dotfile to its target);
a second run changes nothing and says so.

What install changed is written down in a ledger in codesight's data directory (each file's
bytes before the first install, the bytes written, and the agents sharing the file, as Codex and
OpenCode share ``AGENTS.md``), with the first backup of each file beside it. Uninstall gives a
file it finds as install left it back byte for byte, or removes it and the folders install made;
a file edited since loses only codesight's entry. An entry named ``codesight`` that install did not
write is the user's own: kept, unless ``--force``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesight_tui.agents.edits import (
    BEGIN,
    CURSOR_RULE,
    GUIDE,
    SERVER,
    current_entry,
    guide_edit,
    json_edit,
    toml_edit,
)
from codesight_tui.core.errors import CodeSightError, UsageError

__all__ = [
    "AGENTS",
    "BEGIN",
    "BY_NAME",
    "GUIDE",
    "SERVER",
    "Agent",
    "Change",
    "Ledger",
    "Plan",
    "apply",
    "detected",
    "plan",
    "select",
    "server_command",
]


@dataclass(frozen=True)
class Agent:
    """Where one coding agent keeps its MCP servers and its standing instructions."""

    name: str
    title: str
    markers: tuple[str, ...]  # under the home directory: any of them means the agent is installed
    binaries: tuple[str, ...]
    user_config: str  # under the home directory ("~" and XDG_CONFIG_HOME as "$XDG/")
    project_config: str | None  # under the project
    key: str  # the table of MCP servers
    flavour: str  # json-command (command + args), json-typed ("type": "stdio"), opencode, toml
    user_guide: str | None = None
    project_guide: str | None = None
    guide_is_file: bool = False  # the guide is a file of its own (Cursor's rule), not a block in one
    jsonc: bool = False  # the agent reads its JSON with comments and trailing commas


AGENTS: tuple[Agent, ...] = (
    Agent(
        "claude-code",
        "Claude Code",
        (".claude", ".claude.json"),
        ("claude",),
        ".claude.json",
        ".mcp.json",
        "mcpServers",
        "json-typed",
        ".claude/CLAUDE.md",
        "CLAUDE.md",
    ),
    Agent(
        "cursor",
        "Cursor",
        (".cursor",),
        ("cursor", "cursor-agent"),
        ".cursor/mcp.json",
        ".cursor/mcp.json",
        "mcpServers",
        "json-command",
        None,
        ".cursor/rules/codesight.mdc",
        guide_is_file=True,
        jsonc=True,
    ),
    Agent(
        "codex",
        "Codex CLI",
        (".codex",),
        ("codex",),
        ".codex/config.toml",
        ".codex/config.toml",
        "mcp_servers",
        "toml",
        ".codex/AGENTS.md",
        "AGENTS.md",
    ),
    Agent(
        "gemini",
        "Gemini CLI",
        (".gemini",),
        ("gemini",),
        ".gemini/settings.json",
        ".gemini/settings.json",
        "mcpServers",
        "json-command",
        ".gemini/GEMINI.md",
        "GEMINI.md",
        jsonc=True,
    ),
    Agent(
        "opencode",
        "OpenCode",
        ("$XDG/opencode", ".opencode"),
        ("opencode",),
        "$XDG/opencode/opencode.json",
        "opencode.json",
        "mcp",
        "opencode",
        "$XDG/opencode/AGENTS.md",
        "AGENTS.md",
        jsonc=True,
    ),
    Agent(
        "copilot",
        "GitHub Copilot in VS Code",
        ("$XDG/Code", ".vscode"),
        ("code",),
        "$XDG/Code/User/mcp.json",
        ".vscode/mcp.json",
        "servers",
        "json-typed",
        None,
        ".github/copilot-instructions.md",
        jsonc=True,
    ),
)
BY_NAME = {a.name: a for a in AGENTS} | {"claude": AGENTS[0], "vscode": AGENTS[5], "gemini-cli": AGENTS[3]}


class Ledger:
    """What install wrote, per file (its resolved path): ``before`` (the text before the first
    install, None for a file install created), ``after`` (the text install last wrote),
    ``agents`` (those whose entry or guide is in it), ``entries`` (each agent's server entry as
    written), ``made`` (folders install created for it) and ``backup`` (the first backup).
    Kept as JSON, 0600, in codesight's data directory, never in a project."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.files: dict[str, dict[str, Any]] = data.get("files", {})
            self.made: list[str] = data.get("made", [])  # folders install created, until they go
        except (OSError, ValueError, AttributeError):
            self.files, self.made = {}, []

    def save(self) -> None:
        from codesight_tui.core.private import private_dir

        private_dir(self.path.parent)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"files": self.files, "made": self.made}, f, indent=1)
        os.replace(tmp, self.path)

    def backup_dir(self) -> Path:
        return self.path.parent / "install-backups"


@dataclass
class Change:
    """One file's planned edit: ``before`` is None for a new file, ``after`` None to delete it.
    ``path`` is where the bytes go (a symlinked dotfile's target)."""

    path: Path
    before: str | None
    after: str | None
    agent: str = ""
    entry: dict[str, Any] | None = None  # the server entry this change writes (None: a guide, or a removal)
    remove: bool = False
    restores: bool = False  # gives the file back as it was before the first install
    public: bool = False  # a project's file, meant to be committed: created with the umask's mode

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(True),
            (self.after or "").splitlines(True),
            str(self.path) if self.before is not None else "/dev/null",
            str(self.path) if self.after is not None else "/dev/null",
        )
        # a last line with no newline is marked as diff marks it, not run into the next header
        return "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines)


@dataclass
class Plan:
    agent: Agent
    detected: bool
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left alone, and why

    @property
    def changed(self) -> list[Change]:
        return [c for c in self.changes if c.changed]


def server_command(root: Path | None = None, *, portable: bool = False) -> list[str]:
    """How an agent starts this installation's MCP server: the absolute path of the ``codesight``
    beside this Python (a virtual environment's own), else this Python with ``-m``. A project's
    files, which a team commits, get ``codesight mcp``: the agent starts it in the project, and a
    teammate's ``codesight`` is wherever their PATH finds it."""
    if portable:
        return ["codesight", "mcp"]
    found = shutil.which("codesight", path=str(Path(sys.executable).parent))
    argv = [str(Path(found).absolute())] if found else [str(Path(sys.executable).absolute()), "-m", "codesight_tui"]
    return [*argv, "mcp", *(["--root", str(root)] if root is not None else [])]


def _where(spec: str, home: Path, env: dict[str, Any]) -> Path:
    if spec.startswith("$XDG/"):
        xdg = env.get("XDG_CONFIG_HOME")
        return (Path(xdg) if xdg else home / ".config") / spec[len("$XDG/") :]
    return home / spec


def detected(agent: Agent, home: Path, env: dict[str, Any], project: Path | None = None) -> bool:
    """Whether the agent is installed here: its directory or file under the home, or its program;
    in a project, also its project file (``.mcp.json``, ``opencode.json``, ...) or guide."""
    if any(_where(m, home, env).exists() for m in agent.markers):
        return True
    if project is not None and any((project / f).exists() for f in (agent.project_config, agent.project_guide) if f):
        return True
    return any(shutil.which(b, path=env.get("PATH", "")) for b in agent.binaries)


def _entry(agent: Agent, argv: list[str]) -> dict[str, Any]:
    if agent.flavour == "opencode":
        return {"type": "local", "command": argv, "enabled": True}
    if agent.flavour == "json-typed":
        return {"type": "stdio", "command": argv[0], "args": argv[1:]}
    return {"command": argv[0], "args": argv[1:]}


def _read(path: Path) -> str | None:
    """The file's text with its line endings as they are (CRLF stays CRLF). What is not a regular
    file (a FIFO would block the read forever, a device never ends) is refused, unread."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise CodeSightError(f"{path} is not a regular file: left as is", exit_code=1)
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodeSightError(
            f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8'}", exit_code=1
        ) from None


def _inside(path: Path, project: Path) -> None:
    """Refuse a project file that a link (the file's own, or a folder's on its way) takes out of
    the project: a cloned repository can plant ``CLAUDE.md -> ~/.bashrc``, and following it would
    append to, replace or delete a file the user never named."""
    root = project.resolve()
    target = path.resolve()
    if target != root and root not in target.parents:
        shown = path.relative_to(project) if path.is_relative_to(project) else path
        raise CodeSightError(
            f"{shown} links out of the project (to {target}): remove the link or edit it by hand; nothing was changed",
            exit_code=1,
        )


def _writable(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not mode & 0o222:
        raise CodeSightError(
            f"{path} is read-only: nothing was changed (make it writable, or edit it by hand)", exit_code=1
        )


def _umask() -> int:
    """The process's umask (read by setting it back at once: the CLI is one thread here)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _key(path: Path) -> str:
    """The ledger's name for a file: its folder resolved (the file may not exist yet)."""
    return str(path.parent.resolve() / path.name)


def _target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def _file_change(
    agent: Agent,
    path: Path,
    before: str | None,
    edited: str | None,
    *,
    remove: bool,
    ledger: Ledger,
    entry: dict[str, Any] | None = None,
    shared: bool = False,
    public: bool = False,
) -> Change:
    """The change to one file, with the ledger's say: an uninstall of a file that is as install
    left it gives back its first bytes (or removes it); a guide another agent still uses stays.
    ``public``: a project's file (``.mcp.json``, ``AGENTS.md``), created with the umask's mode; a
    user's own configuration is created 0600."""
    target = _target(path)
    record = ledger.files.get(_key(target))
    if remove and record is not None and agent.name in record.get("agents", []):
        others = [a for a in record["agents"] if a != agent.name]
        if shared and others:
            return Change(target, before, before, agent.name, remove=True, public=public)
        if not others and before == record.get("after"):
            return Change(target, before, record.get("before"), agent.name, remove=True, restores=True, public=public)
    return Change(target, before, edited, agent.name, entry=entry, remove=remove, public=public)


def _looks_ours(agent: Agent, current: object) -> bool:
    """An entry an earlier codesight wrote (before the ledger): the shape install writes, no more."""
    if not isinstance(current, dict):
        return False
    template = _entry(agent, ["codesight", "mcp"])
    if set(current) - set(template):
        return False
    argv = current.get("command") if agent.flavour == "opencode" else [current.get("command"), *current.get("args", [])]
    return isinstance(argv, list) and "mcp" in argv[:4] and any("codesight" in str(a) for a in argv[:3])


def plan(
    agent: Agent,
    *,
    home: Path,
    env: dict[str, Any],
    project: Path | None,
    remove: bool,
    ledger: Ledger | None = None,
    force: bool = False,
) -> Plan:
    """What ``install`` (or ``uninstall`` with ``remove``) would change for one agent."""
    ledger = ledger if ledger is not None else Ledger(Path(os.devnull))
    p = Plan(agent, detected(agent, home, env, project))
    if project is not None:
        if agent.project_config is None:
            return p
        config = project / agent.project_config
        guide = project / agent.project_guide if agent.project_guide else None
    else:
        config = _where(agent.user_config, home, env)
        guide = _where(agent.user_guide, home, env) if agent.user_guide else None
    if project is not None:
        for path in (config, guide):
            if path is not None:
                _inside(path, project)
    entry = None if remove else _entry(agent, server_command(project, portable=project is not None))
    before = _read(config)
    current = current_entry(agent, before, config)
    record = ledger.files.get(_key(_target(config)))
    ours = (
        current is None
        or current == entry
        or (record.get("entries", {}).get(agent.name) == current if record else _looks_ours(agent, current))
    )
    if not ours and not force:
        p.notes.append(
            f"{config}: its codesight entry is not one install wrote (your own?): left as is;"
            f" --force {'removes' if remove else 'replaces'} it"
        )
    else:
        if agent.flavour == "toml":
            edited = toml_edit(config, before, agent.key, entry)
        else:
            edited = json_edit(config, before, agent.key, entry, jsonc=agent.jsonc)
        p.changes.append(
            _file_change(
                agent, config, before, edited, remove=remove, ledger=ledger, entry=entry, public=project is not None
            )
        )
    if guide is not None:
        before = _read(guide)
        if agent.guide_is_file:  # the file is codesight's own: written whole, removed whole
            edited = None if remove else CURSOR_RULE
        else:
            edited = guide_edit(before, add=not remove)
        p.changes.append(
            _file_change(
                agent,
                guide,
                before,
                edited,
                remove=remove,
                ledger=ledger,
                shared=not agent.guide_is_file,
                public=project is not None,
            )
        )
    for c in p.changed:
        _writable(c.path)
    return p


def _first_backup(path: Path, key: str, ledger: Ledger) -> Path | None:
    """The file's first backup, in the ledger's folder (never in a project); None where one exists."""
    from codesight_tui.core.private import private_dir

    folder = ledger.backup_dir()
    private_dir(folder)
    backup = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:12]}-{path.name}"
    if backup.exists():
        return None
    shutil.copy2(path, backup)
    os.chmod(backup, 0o600)
    return backup


def _delete(path: Path, change: Change, ledger: Ledger | None) -> None:
    """The file gone, and the folders install made for it, once empty."""
    path.unlink(missing_ok=True)
    if change.restores and ledger is not None:
        d = path.parent.resolve()
        while str(d) in ledger.made:
            try:
                d.rmdir()
            except OSError:
                break
            ledger.made.remove(str(d))
            d = d.parent


def _write(path: Path, change: Change, text: str) -> list[str]:
    """``text`` written to a temporary file beside ``path`` and renamed over it (its mode kept; a new
    file the umask's where others read it, else 0600). Returns the folders it had to make."""
    made: list[str] = []
    d = path.parent.resolve()
    while not d.exists():
        made.append(str(d))
        d = d.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask() if change.public else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return made


def _note(ledger: Ledger, change: Change, key: str, made: list[str], backup: Path | None) -> None:
    """What was done, in the ledger: who shares the file, its first bytes, the folders made."""
    record = ledger.files.get(key)
    if change.remove:
        if record is not None:
            record["agents"] = [a for a in record.get("agents", []) if a != change.agent]
            record.get("entries", {}).pop(change.agent, None)
            if change.restores or not record["agents"]:
                del ledger.files[key]
            else:
                record["after"] = change.after
    else:
        fresh: dict[str, Any] = {
            "before": change.before,
            "agents": [],
            "entries": {},
            "made": made,
            "backup": str(backup) if backup else None,
        }
        record = ledger.files.setdefault(key, fresh)
        record["after"] = change.after
        ledger.made += [d for d in made if d not in ledger.made]
        if change.agent not in record["agents"]:
            record["agents"].append(change.agent)
        if change.entry is not None:
            record["entries"][change.agent] = change.entry
    ledger.save()


def apply(change: Change, ledger: Ledger | None = None) -> Path | None:
    """Carry out one change: keep the file's first backup (in the ledger's folder, never in a
    project), write a temporary file beside it and rename it over (the target of a symlinked
    dotfile, not the link), and write down what was done. Returns the backup's path, if one was
    made now."""
    path = change.path
    key = _key(path)
    record = ledger.files.get(key) if ledger is not None else None
    if not change.changed:  # nothing to write: only the ledger learns who shares the file
        if ledger is not None and record is not None:
            if change.remove:
                record["agents"] = [a for a in record.get("agents", []) if a != change.agent]
            elif change.agent not in record.get("agents", []):
                record.setdefault("agents", []).append(change.agent)
            ledger.save()
        return None
    backup = None
    if ledger is not None and record is None and change.before is not None:
        backup = _first_backup(path, key, ledger)
    made: list[str] = []
    if change.after is None:
        _delete(path, change, ledger)
    else:
        made = _write(path, change, change.after)
    if ledger is not None:
        _note(ledger, change, key, made, backup)
    return backup


def select(names: list[str], home: Path, env: dict[str, Any], project: Path | None = None) -> list[tuple[Agent, bool]]:
    """The agents to act on, each with whether it was named: those named (any spelling in
    ``BY_NAME``), else every one detected here (in a project, its files count too)."""
    if names:
        out: list[tuple[Agent, bool]] = []
        for n in names:
            agent = BY_NAME.get(n.lower())
            if agent is None:
                raise UsageError(f"unknown agent {n!r}: one of {', '.join(a.name for a in AGENTS)}")
            if agent not in [a for a, _ in out]:
                out.append((agent, True))
        return out
    return [(a, False) for a in AGENTS if detected(a, home, env, project)]
