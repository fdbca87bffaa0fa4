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
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesight_tui.core.errors import CodeSightError, UsageError

SERVER = "codesight"
BEGIN, END = "<!-- codesight:begin -->", "<!-- codesight:end -->"
GUIDE = f"""{BEGIN}
## Code search: codesight

Use the `codesight` MCP tools before grep or find when you look for code by meaning or by name:
- `search` with plain words ("where do we retry failed uploads") or a symbol (`RetryPolicy`): ranked
  hits with `path:line`, the enclosing definition and a snippet, in milliseconds.
- `find_related` with `path:line` or a symbol: the code most like it (other implementations, the
  test, the sibling module).
- `find_definition`, `find_references`, `find_callers`, `find_callees` with a name or `path:line`:
  where it is defined, used, called from, and what it calls (code only, never comments or strings).
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


def _indent(text: str) -> str | int:
    """The indentation a JSON file already uses (default two spaces)."""
    m = re.search(r"\n([ \t]+)\S", text)
    if not m:
        return 2
    return "\t" if m.group(1).startswith("\t") else len(m.group(1))


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")


def _blank_comments(text: str) -> str:
    """JSON with comments as plain JSON of the same length: ``//`` and ``/* */`` comments and
    trailing commas become spaces (newlines stay), so every offset found in it is the original's."""
    out = list(text)
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif text.startswith("//", i) or text.startswith("/*", i):
            if text[i + 1] == "/":
                end = text.find("\n", i)
            else:
                end = text.find("*/", i + 2)
                end = end + 2 if end >= 0 else -1
            end = n if end < 0 else end
            for k in range(i, end):
                if out[k] not in "\r\n":
                    out[k] = " "
            i = end
            continue
        i += 1
    blanked = "".join(out)
    return re.sub(r",(\s*[}\]])", lambda m: " " + m.group(1), blanked)


def _ws_end(text: str, at: int = 0) -> int:
    """Where the whitespace from ``at`` ends (``_WS`` matches the empty string too)."""
    m = _WS.match(text, at)
    return m.end() if m else at


def _members(shadow: str, at: int) -> Iterator[tuple[str, int, int, int]]:
    """``(name, name_start, value_start, value_end)`` of each member of the JSON object whose
    ``{`` is at ``at`` (``shadow`` is known to parse)."""
    i = _ws_end(shadow, at + 1)
    while shadow[i] != "}":
        name, j = _DECODER.raw_decode(shadow, i)
        j = _ws_end(shadow, j) + 1  # past ':'
        j = _ws_end(shadow, j)
        _, k = _DECODER.raw_decode(shadow, j)
        yield name, i, j, k
        i = _ws_end(shadow, k)
        if shadow[i] == ",":
            i = _ws_end(shadow, i + 1)


def _line_indent(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    m = re.match(r"[ \t]*", text[start:at])
    return m.group(0) if m else ""


def _dump(value: Any, unit: str | int, indent: str, eol: str = "\n") -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", eol + indent)


def _put(text: str, shadow: str, obj_at: int, name: str, value: Any, unit: str | int) -> str:
    """``text`` with member ``name`` of the object at ``obj_at`` set to ``value``, touching
    nothing else: a new member goes last, on a line of its own, indented like its siblings."""
    eol = "\r\n" if "\r\n" in text else "\n"
    members = list(_members(shadow, obj_at))
    for n, _, vs, ve in members:
        if n == name:
            return text[:vs] + _dump(value, unit, _line_indent(text, vs), eol) + text[ve:]
    step = "\t" if unit == "\t" else " " * int(unit)
    if members:
        indent = _line_indent(text, members[-1][1])
        end = members[-1][3]
        return text[:end] + f",{eol}{indent}{json.dumps(name)}: {_dump(value, unit, indent, eol)}" + text[end:]
    close = shadow.index("}", obj_at)
    outer = _line_indent(text, obj_at)
    indent = outer + step
    return (
        text[: obj_at + 1]
        + f"{eol}{indent}{json.dumps(name)}: {_dump(value, unit, indent, eol)}{eol}{outer}"
        + text[close:]
    )


def _drop(text: str, shadow: str, obj_at: int, name: str) -> str:
    """``text`` without member ``name`` of the object at ``obj_at`` (and its comma)."""
    members = list(_members(shadow, obj_at))
    for i, (n, ns, _, ve) in enumerate(members):
        if n != name:
            continue
        if i > 0:  # from the end of the previous value: its comma goes with this member
            return text[: members[i - 1][3]] + text[ve:]
        if len(members) > 1:  # the first of several: up to the next member
            return text[:ns] + text[members[1][1] :]
        close = _ws_end(shadow, ve)
        return text[: obj_at + 1] + text[close:]
    return text


def _json_data(path: Path, text: str, jsonc: bool) -> object:
    try:
        return json.loads(_blank_comments(text) if jsonc else text)
    except ValueError as exc:
        kind = "JSON (comments allowed)" if jsonc else "plain JSON"
        raise CodeSightError(
            f"{path} is not {kind} ({exc}): fix it or edit it by hand; nothing was changed", exit_code=1
        ) from None


def _current_entry(agent: Agent, text: str | None, path: Path) -> object:
    """The ``codesight`` entry the file holds now (None: none)."""
    if text is None or not text.strip():
        return None
    if agent.flavour == "toml":
        servers = _toml_data(path, text).get(agent.key)
    else:
        data = _json_data(path, text, agent.jsonc)
        servers = data.get(agent.key) if isinstance(data, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def _json_edit(path: Path, text: str | None, key: str, entry: dict[str, Any] | None, jsonc: bool = False) -> str | None:
    """The file with ``key.codesight`` set to ``entry`` (None: removed). Only that member's text
    changes: the other entries keep their layout, and a JSON-with-comments file its comments."""
    if text is None or not text.strip():
        if entry is None:
            return text
        return json.dumps({key: {SERVER: entry}}, indent=2) + "\n"
    shadow = _blank_comments(text) if jsonc else text
    data = _json_data(path, text, jsonc)
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise CodeSightError(f'{path}: expected an object with an object "{key}"; nothing was changed', exit_code=1)
    servers = data.get(key)
    top = _ws_end(shadow)
    unit = _indent(text)
    if entry is None:
        if not servers or SERVER not in servers:
            return text
        del servers[SERVER]
        at = next(vs for n, _, vs, _ in _members(shadow, top) if n == key)
        out = _drop(text, shadow, at, SERVER)
    else:
        if servers is not None and servers.get(SERVER) == entry:
            return text
        data.setdefault(key, {})[SERVER] = entry
        member = next((vs for n, _, vs, _ in _members(shadow, top) if n == key), None)
        out = (
            _put(text, shadow, top, key, {SERVER: entry}, unit)
            if member is None
            else _put(text, shadow, member, SERVER, entry, unit)
        )
    try:
        same = json.loads(_blank_comments(out) if jsonc else out) == data
    except ValueError:
        same = False
    if not same:  # never write what does not say exactly what was meant
        if jsonc and shadow != text:
            raise CodeSightError(
                f"{path}: cannot edit it without losing its comments; add codesight by hand", exit_code=1
            )
        out = json.dumps(data, indent=unit, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")
    return out


def _toml_data(path: Path, text: str) -> dict[str, Any]:
    import tomlkit

    try:
        return dict(tomlkit.parse(text).unwrap())
    except Exception as exc:  # tomlkit's ParseError and friends  # noqa: BLE001
        raise CodeSightError(
            f"{path} is not valid TOML ({exc}): fix it or edit it by hand; nothing was changed", exit_code=1
        ) from None


def _toml_section(key: str) -> re.Pattern[str]:
    """``[key.codesight]`` and its lines, up to the next table header or the end."""
    return re.compile(rf"^\[{re.escape(key)}\.{SERVER}\][^\n]*\n?(?:(?!\[)[^\n]*(?:\n|$))*", re.MULTILINE)


def _without_empty(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k == key and v == {})}


def _toml_edit(path: Path, text: str | None, key: str, entry: dict[str, Any] | None) -> str | None:
    """The TOML file with ``key.codesight`` set to ``entry`` (None: removed), every other byte
    kept: codesight's entry is a ``[key.codesight]`` table of its own, appended at the end (valid
    beside dotted keys, ``mcp_servers.other.command = ...``), or a member of an inline table
    ``mcp_servers = { ... }``. The result is parsed and compared with what was meant before it is
    written; what cannot be said exactly is refused."""
    import tomlkit

    text_ = text or ""
    data = _toml_data(path, text_)
    servers = data.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise CodeSightError(f'{path}: "{key}" is not a table; nothing was changed', exit_code=1)
    expected = json.loads(json.dumps(data, default=str))  # a plain copy
    if entry is None:
        if not servers or SERVER not in servers:
            return text
        del expected[key][SERVER]
        out = _toml_section(key).sub("", text_, count=1)
        if out == text_:  # not a table of its own (a dotted key or an inline table): tomlkit removes it
            doc = tomlkit.parse(text_)
            del doc[key][SERVER]
            out = tomlkit.dumps(doc)
    else:
        if servers is not None and servers.get(SERVER) == entry:
            return text
        expected.setdefault(key, {})[SERVER] = entry
        doc = tomlkit.parse(text_)
        if isinstance(doc.get(key), tomlkit.items.InlineTable):
            inline = tomlkit.inline_table()
            inline.update(entry)
            doc[key][SERVER] = inline
            out = tomlkit.dumps(doc)
        else:
            base = _toml_section(key).sub("", text_, count=1)
            eol = "\r\n" if "\r\n" in text_ else "\n"
            lines = [f"[{key}.{SERVER}]"] + [f"{k} = {tomlkit.item(v).as_string()}" for k, v in entry.items()]
            if base.strip():  # after the user's last line, one blank line between
                base += "" if base.endswith("\n") else eol
                base += "" if base.endswith(eol * 2) else eol
            out = base + eol.join(lines) + eol
    try:
        ok = _without_empty(dict(tomlkit.parse(out).unwrap()), key) == _without_empty(expected, key)
    except Exception:  # noqa: BLE001 - an edit tomlkit can't read back is no edit: refused, the file untouched
        ok = False
    if not ok:
        raise CodeSightError(
            f"{path}: cannot set codesight's entry without changing others; add it by hand: [{key}.{SERVER}]",
            exit_code=1,
        )
    return out if entry is not None or out.strip() else ""


def _guide_edit(text: str | None, add: bool) -> str | None:
    """A Markdown file with codesight's marked block added (once) or removed; a file left empty
    by the removal goes."""
    text_ = text or ""
    eol = "\r\n" if "\r\n" in text_ else "\n"
    guide = GUIDE.replace("\n", eol)
    block = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"(?:\r?\n)?", re.DOTALL)
    if add:
        if BEGIN in text_:
            return block.sub(lambda _m: guide, text_, count=1)
        return text_ + (eol if text_ and not text_.endswith("\n") else "") + (eol if text_.strip() else "") + guide
    if BEGIN not in text_:
        return text
    new = block.sub("", text_, count=1).rstrip("\r\n")
    return new + eol if new.strip() else None


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
    current = _current_entry(agent, before, config)
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
            edited = _toml_edit(config, before, agent.key, entry)
        else:
            edited = _json_edit(config, before, agent.key, entry, jsonc=agent.jsonc)
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
            edited = _guide_edit(before, add=not remove)
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


def apply(change: Change, ledger: Ledger | None = None) -> Path | None:
    """Carry out one change: keep the file's first backup (in the ledger's folder, never in a
    project), write a temporary file beside it and rename it over (the target of a symlinked
    dotfile, not the link), and write down what was done. Returns the backup's path, if one was
    made now."""
    path = change.path
    key = _key(path)
    record = ledger.files.get(key) if ledger is not None else None
    backup = None
    if not change.changed:  # nothing to write: only the ledger learns who shares the file
        if ledger is not None and record is not None:
            if change.remove:
                record["agents"] = [a for a in record.get("agents", []) if a != change.agent]
            elif change.agent not in record.get("agents", []):
                record.setdefault("agents", []).append(change.agent)
            ledger.save()
        return None
    if ledger is not None and record is None and change.before is not None:
        folder = ledger.backup_dir()
        from codesight_tui.core.private import private_dir

        private_dir(folder)
        backup = folder / f"{hashlib.sha256(key.encode()).hexdigest()[:12]}-{path.name}"
        if not backup.exists():
            shutil.copy2(path, backup)
            os.chmod(backup, 0o600)
        else:
            backup = None
    made: list[str] = []
    if change.after is None:
        path.unlink(missing_ok=True)
        if change.restores and ledger is not None:  # the folders install made for it, once empty
            d = path.parent.resolve()
            while str(d) in ledger.made:
                try:
                    d.rmdir()
                except OSError:
                    break
                ledger.made.remove(str(d))
                d = d.parent
    else:
        d = path.parent.resolve()
        while not d.exists():
            made.append(str(d))
            d = d.parent
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask() if change.public else 0o600
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(change.after)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    if ledger is not None:
        if change.remove:
            if record is not None:
                record["agents"] = [a for a in record.get("agents", []) if a != change.agent]
                record.get("entries", {}).pop(change.agent, None)
                if change.restores or not record["agents"]:
                    del ledger.files[key]
                else:
                    record["after"] = change.after
        else:
            record = ledger.files.setdefault(
                key,
                {
                    "before": change.before,
                    "agents": [],
                    "entries": {},
                    "made": made,
                    "backup": str(backup) if backup else None,
                },
            )
            record["after"] = change.after
            ledger.made += [d for d in made if d not in ledger.made]
            if change.agent not in record["agents"]:
                record["agents"].append(change.agent)
            if change.entry is not None:
                record["entries"][change.agent] = change.entry
        ledger.save()
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
