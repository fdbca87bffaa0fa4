"""How codesight edits an agent's files in place: a JSON (or JSON-with-comments) file member by
member, a TOML file as a table of its own, and a Markdown guide between its own markers. Each
edit keeps every byte it does not own, and is checked by parsing the result."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError

if TYPE_CHECKING:
    from codesight_tui.agents import Agent

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

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")


def _indent(text: str) -> str | int:
    """The indentation a JSON file already uses (default two spaces)."""
    m = re.search(r"\n([ \t]+)\S", text)
    if not m:
        return 2
    return "\t" if m.group(1).startswith("\t") else len(m.group(1))


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


def current_entry(agent: Agent, text: str | None, path: Path) -> object:
    """The ``codesight`` entry the file holds now (None: none)."""
    if text is None or not text.strip():
        return None
    if agent.flavour == "toml":
        servers = _toml_data(path, text).get(agent.key)
    else:
        data = _json_data(path, text, agent.jsonc)
        servers = data.get(agent.key) if isinstance(data, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def json_edit(path: Path, text: str | None, key: str, entry: dict[str, Any] | None, jsonc: bool = False) -> str | None:
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


def toml_edit(path: Path, text: str | None, key: str, entry: dict[str, Any] | None) -> str | None:
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


def guide_edit(text: str | None, add: bool) -> str | None:
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
