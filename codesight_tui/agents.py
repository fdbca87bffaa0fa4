"""``codesight install`` / ``uninstall``: codesight's MCP server, and a few lines on when to use it,
in the configuration of the coding agents a user has.

Each agent's file is edited the way its owner would: the other entries, their order and the file's
indentation stay; a file that does not parse is refused, never rewritten; a changed file is backed
up first (``<name>.codesight.bak``) and replaced atomically (a temporary file, then a rename,
through a symlinked dotfile to its target); a second run changes nothing and says so.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codesight_tui.core.errors import CodeSightError

SERVER = "codesight"
BEGIN, END = "<!-- codesight:begin -->", "<!-- codesight:end -->"
GUIDE = f"""{BEGIN}
## Code search: codesight

Use the `codesight` MCP tools before grep or find when you look for code by meaning or by name:
- `search` with plain words ("where do we retry failed uploads") or a symbol (`RetryPolicy`): ranked
  hits with `path:line`, the enclosing definition and a snippet, in milliseconds.
- `find_related` with `path:line` or a symbol: the code most like it (other implementations, the
  test, the sibling module).
Use grep for exact strings and regular expressions, and to list every occurrence.
{END}
"""
CURSOR_RULE = """---
description: When to use codesight for code search
alwaysApply: true
---
""" + GUIDE.replace(BEGIN + "\n", "").replace(END + "\n", "")


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


AGENTS: tuple[Agent, ...] = (
    Agent("claude-code", "Claude Code", (".claude", ".claude.json"), ("claude",), ".claude.json", ".mcp.json",
          "mcpServers", "json-typed", ".claude/CLAUDE.md", "CLAUDE.md"),
    Agent("cursor", "Cursor", (".cursor",), ("cursor", "cursor-agent"), ".cursor/mcp.json", ".cursor/mcp.json",
          "mcpServers", "json-command", None, ".cursor/rules/codesight.mdc", guide_is_file=True),
    Agent("codex", "Codex CLI", (".codex",), ("codex",), ".codex/config.toml", ".codex/config.toml",
          "mcp_servers", "toml", ".codex/AGENTS.md", "AGENTS.md"),
    Agent("gemini", "Gemini CLI", (".gemini",), ("gemini",), ".gemini/settings.json", ".gemini/settings.json",
          "mcpServers", "json-command", ".gemini/GEMINI.md", "GEMINI.md"),
    Agent("opencode", "OpenCode", ("$XDG/opencode", ".opencode"), ("opencode",), "$XDG/opencode/opencode.json",
          "opencode.json", "mcp", "opencode", "$XDG/opencode/AGENTS.md", "AGENTS.md"),
    Agent("copilot", "GitHub Copilot in VS Code", ("$XDG/Code", ".vscode"), ("code",), "$XDG/Code/User/mcp.json",
          ".vscode/mcp.json", "servers", "json-typed", None, ".github/copilot-instructions.md"),
)
BY_NAME = {a.name: a for a in AGENTS} | {"claude": AGENTS[0], "vscode": AGENTS[5], "gemini-cli": AGENTS[3]}


@dataclass
class Change:
    """One file's planned edit: ``before`` is None for a new file, ``after`` None to delete it."""

    path: Path
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff((self.before or "").splitlines(True), (self.after or "").splitlines(True),
                                            str(self.path) if self.before is not None else "/dev/null",
                                            str(self.path) if self.after is not None else "/dev/null"))


@dataclass
class Plan:
    agent: Agent
    detected: bool
    changes: list[Change] = field(default_factory=list)

    @property
    def changed(self) -> list[Change]:
        return [c for c in self.changes if c.changed]


def server_command(root: Path | None = None) -> list[str]:
    """How an agent starts this installation's MCP server: the absolute path of the ``codesight``
    beside this Python (a virtual environment's own), else this Python with ``-m``."""
    found = shutil.which("codesight", path=str(Path(sys.executable).parent))
    argv = [str(Path(found).absolute())] if found else [str(Path(sys.executable).absolute()), "-m", "codesight_tui"]
    return [*argv, "mcp", *(["--root", str(root)] if root is not None else [])]


def _where(spec: str, home: Path, env: dict) -> Path:
    if spec.startswith("$XDG/"):
        xdg = env.get("XDG_CONFIG_HOME")
        return (Path(xdg) if xdg else home / ".config") / spec[len("$XDG/"):]
    return home / spec


def detected(agent: Agent, home: Path, env: dict) -> bool:
    """Whether the agent is installed here: its directory or file under the home, or its program."""
    if any(_where(m, home, env).exists() for m in agent.markers):
        return True
    return any(shutil.which(b, path=env.get("PATH", "")) for b in agent.binaries)


def _entry(agent: Agent, argv: list[str]) -> dict:
    if agent.flavour == "opencode":
        return {"type": "local", "command": argv, "enabled": True}
    if agent.flavour == "json-typed":
        return {"type": "stdio", "command": argv[0], "args": argv[1:]}
    return {"command": argv[0], "args": argv[1:]}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CodeSightError(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8'}",
                             exit_code=1) from None


def _indent(text: str) -> str | int:
    """The indentation a JSON file already uses (default two spaces)."""
    m = re.search(r"\n([ \t]+)\S", text)
    if not m:
        return 2
    return "\t" if m.group(1).startswith("\t") else len(m.group(1))


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")


def _members(text: str, at: int):
    """``(name, name_start, value_start, value_end)`` of each member of the JSON object whose
    ``{`` is at ``at`` (the text is known to parse)."""
    i = _WS.match(text, at + 1).end()
    while text[i] != "}":
        name, j = _DECODER.raw_decode(text, i)
        j = _WS.match(text, j).end() + 1  # past ':'
        j = _WS.match(text, j).end()
        _, k = _DECODER.raw_decode(text, j)
        yield name, i, j, k
        i = _WS.match(text, k).end()
        if text[i] == ",":
            i = _WS.match(text, i + 1).end()


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    return re.match(r"[ \t]*", text[start:at]).group(0)


def _dump(value, unit: str | int, indent: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _put(text: str, obj_at: int, name: str, value, unit: str | int) -> str:
    """``text`` with member ``name`` of the object at ``obj_at`` set to ``value``, touching
    nothing else: a new member goes last, on a line of its own, indented like its siblings."""
    members = list(_members(text, obj_at))
    for n, _, vs, ve in members:
        if n == name:
            return text[:vs] + _dump(value, unit, _line_indent(text, vs)) + text[ve:]
    step = "\t" if unit == "\t" else " " * int(unit)
    if members:
        indent = _line_indent(text, members[-1][1])
        end = members[-1][3]
        return text[:end] + f",\n{indent}{json.dumps(name)}: {_dump(value, unit, indent)}" + text[end:]
    close = text.index("}", obj_at)
    outer = _line_indent(text, obj_at)
    indent = outer + step
    return text[:obj_at + 1] + f"\n{indent}{json.dumps(name)}: {_dump(value, unit, indent)}\n{outer}" + text[close:]


def _drop(text: str, obj_at: int, name: str) -> str:
    """``text`` without member ``name`` of the object at ``obj_at`` (and its comma)."""
    members = list(_members(text, obj_at))
    for i, (n, ns, _, ve) in enumerate(members):
        if n != name:
            continue
        if i > 0:  # from the end of the previous value: its comma goes with this member
            return text[:members[i - 1][3]] + text[ve:]
        if len(members) > 1:  # the first of several: up to the next member
            return text[:ns] + text[members[1][1]:]
        close = _WS.match(text, ve).end()
        return text[:obj_at + 1] + text[close:]
    return text


def _json_edit(path: Path, text: str | None, key: str, entry: dict | None) -> str | None:
    """The file with ``key.codesight`` set to ``entry`` (None: removed). Only that member's text
    changes: the other entries keep their layout, comments aside (a file with comments is not
    JSON and is refused)."""
    if text is None or not text.strip():
        if entry is None:
            return text
        return json.dumps({key: {SERVER: entry}}, indent=2) + "\n"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CodeSightError(f"{path} is not plain JSON ({exc}): fix it or edit it by hand; nothing was changed",
                             exit_code=1) from None
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise CodeSightError(f"{path}: expected an object with an object \"{key}\"; nothing was changed",
                             exit_code=1)
    servers = data.get(key)
    top = _WS.match(text).end()
    unit = _indent(text)
    if entry is None:
        if not servers or SERVER not in servers:
            return text
        del servers[SERVER]
        at = next(vs for n, _, vs, _ in _members(text, top) if n == key)
        out = _drop(text, at, SERVER)
    else:
        if servers is not None and servers.get(SERVER) == entry:
            return text
        data.setdefault(key, {})[SERVER] = entry
        at = next((vs for n, _, vs, _ in _members(text, top) if n == key), None)
        out = _put(text, top, key, {SERVER: entry}, unit) if at is None else _put(text, at, SERVER, entry, unit)
    if json.loads(out) != data:  # never write what does not say exactly what was meant
        out = json.dumps(data, indent=unit, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")
    return out


def _toml_edit(path: Path, text: str | None, key: str, entry: dict | None) -> str | None:
    """The TOML file with ``[key.codesight]`` set to ``entry`` (None: removed), comments and
    layout kept (tomlkit)."""
    import tomlkit

    try:
        doc = tomlkit.parse(text or "")
    except Exception as exc:  # tomlkit's ParseError and friends
        raise CodeSightError(f"{path} is not valid TOML ({exc}): fix it or edit it by hand; nothing was changed",
                             exit_code=1) from None
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise CodeSightError(f"{path}: \"{key}\" is not a table; nothing was changed", exit_code=1)
    if entry is None:
        if servers is None or SERVER not in servers:
            return text
        del servers[SERVER]
        if not servers:
            del doc[key]
        return tomlkit.dumps(doc).rstrip("\n") + "\n" if doc else ""
    else:
        if servers is not None and SERVER in servers and servers[SERVER].unwrap() == entry:
            return text
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc[key] = servers
        table = tomlkit.table()
        for k, v in entry.items():
            table[k] = v
        servers[SERVER] = table
    return tomlkit.dumps(doc)


def _guide_edit(text: str | None, add: bool) -> str | None:
    """A Markdown file with codesight's marked block added (once) or removed; a file left empty
    by the removal goes."""
    text_ = text or ""
    block = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)
    if add:
        if BEGIN in text_:
            new = block.sub(GUIDE, text_, count=1)
        else:
            new = text_ + ("\n" if text_ and not text_.endswith("\n") else "") + ("\n" if text_.strip() else "") + GUIDE
        return new
    if BEGIN not in text_:
        return text
    new = block.sub("", text_, count=1).rstrip("\n")
    return new + "\n" if new.strip() else None


def _inside(path: Path, project: Path) -> None:
    """Refuse a project file that a link (the file's own, or a folder's on its way) takes out of
    the project: a cloned repository can plant ``CLAUDE.md -> ~/.bashrc``, and following it would
    append to, replace or delete a file the user never named."""
    root = project.resolve()
    target = path.resolve()
    if target != root and root not in target.parents:
        shown = path.relative_to(project) if path.is_relative_to(project) else path
        raise CodeSightError(f"{shown} links out of the project (to {target}): remove the link or edit it by hand;"
                             " nothing was changed", exit_code=1)


def plan(agent: Agent, *, home: Path, env: dict, project: Path | None, remove: bool) -> Plan:
    """What ``install`` (or ``uninstall`` with ``remove``) would change for one agent."""
    p = Plan(agent, detected(agent, home, env))
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
    entry = None if remove else _entry(agent, server_command(project))
    before = _read(config)
    edit = _toml_edit if agent.flavour == "toml" else _json_edit
    p.changes.append(Change(config, before, edit(config, before, agent.key, entry)))
    if guide is not None:
        before = _read(guide)
        if agent.guide_is_file:  # the file is codesight's own: written whole, removed whole
            p.changes.append(Change(guide, before, None if remove else CURSOR_RULE))
        else:
            p.changes.append(Change(guide, before, _guide_edit(before, add=not remove)))
    return p


def apply(change: Change) -> Path | None:
    """Carry out one change: back the file up, write a temporary file beside it and rename it over
    (the target of a symlinked dotfile, not the link). Returns the backup's path, if one was made."""
    path = change.path.resolve() if change.path.is_symlink() else change.path
    backup = None
    if change.before is not None:
        backup = path.with_name(path.name + ".codesight.bak")
        shutil.copy2(path, backup)
    if change.after is None:
        path.unlink(missing_ok=True)
        return backup
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(change.after)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def select(names: list[str], home: Path, env: dict) -> list[tuple[Agent, bool]]:
    """The agents to act on, each with whether it was named: those named (any spelling in
    ``BY_NAME``), else every one detected here."""
    if names:
        out = []
        for n in names:
            agent = BY_NAME.get(n.lower())
            if agent is None:
                raise CodeSightError(f"unknown agent {n!r}: one of {', '.join(a.name for a in AGENTS)}", exit_code=2)
            if agent not in [a for a, _ in out]:
                out.append((agent, True))
        return out
    return [(a, False) for a in AGENTS if detected(a, home, env)]
