"""Follow the code (issue 51): a symbol's definitions, its references, its callers and its callees,
from the index's symbol tables (``core.store.symbols``).

A name resolves through the file it is used in where that is cheap: a definition in the same file,
or the one candidate whose module the file imports. Otherwise every candidate is kept, ranked: the
same file, then the same folder, then a file that imports the name or its module, then anywhere
else, and the answer says so ("one of N candidates"). A caller whose call resolves to another
definition than the one asked about is left out; one that may be either is kept, and says so.
"""

from __future__ import annotations

import posixpath
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, NotHereError
from codesight_tui.core.ingest.paths import DECLARATIONS, VALUE_ORDER, classify
from codesight_tui.core.search.related import parse_target
from codesight_tui.core.store import symbols as tables
from codesight_tui.core.store.store import path_matches
from codesight_tui.core.store.symbols import DefRecord

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store

ACTIONS = ("definitions", "references", "callers", "callees")
RANKS = ("same file", "same folder", "imported", "elsewhere")
MAX_SITES = 2000  # per answer: more is a dump of the index, not an answer


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition: a function, method, class, type or module."""

    name: str
    kind: str
    scope: str  # its enclosing definitions, outermost first, "." between
    path: str
    line: int  # the line of its name
    start_line: int
    end_line: int

    @property
    def qualified(self) -> str:
        return f"{self.scope}.{self.name}" if self.scope else self.name

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _symbol(d: DefRecord) -> Symbol:
    return Symbol(d.name, d.kind, d.scope, d.path, d.line, d.start_line, d.end_line)


@dataclass(frozen=True, slots=True)
class Site:
    """One place in the code: a reference, a caller's call, or a callee's call (``target`` then
    being the definition it calls, where one is known)."""

    path: str
    line: int
    name: str
    kind: str  # call, type, import, other; "definition" for a definition's own name
    text: str  # the line, stripped
    within: Symbol | None  # the innermost definition around it (for callers: the caller)
    target: Symbol | None = None  # callees: what the call resolves to
    resolution: str = "resolved"  # "resolved", or "one of N candidates (RANK)"; "not defined here"

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("path", "line", "name", "kind", "text", "resolution")}
        d["within"] = self.within.to_dict() if self.within else None
        d["target"] = self.target.to_dict() if self.target else None
        return d


@dataclass
class Navigation:
    """An answer: what was followed (``symbol``: the definition, where the target names one;
    ``candidates``: every definition the name has) and the places found."""

    action: str
    target: str
    name: str
    symbol: Symbol | None
    candidates: list[Symbol] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    truncated: bool = False

    pinned: bool = False  # the target named the definition itself (PATH:LINE, or Scope.name)

    @property
    def resolution(self) -> str:
        n = len(self.candidates)
        if n == 0:
            return "not defined here"
        return "resolved" if n == 1 or self.symbol is not None and self.pinned else f"one of {n} candidates"

    def __len__(self) -> int:
        return len(self.sites) if self.action != "definitions" else len(self.candidates)

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "name": self.name, "resolution": self.resolution,
                "symbol": self.symbol.to_dict() if self.symbol else None,
                "candidates": [c.to_dict() for c in self.candidates],
                "sites": [s.to_dict() for s in self.sites], "truncated": self.truncated}


class Resolver:
    """Where one name's uses resolve: its definitions, ranked for the file a use is in by what that
    file imports (``imports_of``: a file's imported names, one row read per file)."""

    def __init__(self, conn: sqlite3.Connection, name: str, defs: list[DefRecord] | None,
                 imports_of: Callable[[str], set[str]]) -> None:
        self.name = name
        self.defs = defs if defs is not None else tables.definitions(conn, name)
        self.imports_of = imports_of

    def _imports(self, here: str, name: str) -> bool:
        return name in self.imports_of(here)

    def rank(self, d: DefRecord, here: str) -> int:
        if d.path == here:
            return 0
        folder, module, _ = _place(d.path)
        if folder == _place(here)[0]:
            return 1
        if self._imports(here, module):
            return 2
        return 3

    def verdict(self, here: str) -> tuple[DefRecord | None, str]:
        """The definition a use in ``here`` most likely means, and how sure that is: one pass over
        the candidates (``forward`` has thousands in a tree of models), no sort."""
        if not self.defs:
            return None, "not defined here"
        if len(self.defs) == 1:
            return self.defs[0], "resolved"
        ranks = [self.rank(d, here) for d in self.defs]
        top = min(ranks)
        tied = [d for r, d in zip(ranks, self.defs, strict=True) if r == top]
        best = min(tied, key=lambda d: (_place(d.path)[2], d.path, d.line))
        ties = len(tied)
        if top == 0 and ties == 1:
            return best, "resolved"  # defined in the same file
        if top == 2 and ties == 1:
            return best, "resolved"  # the one whose module the file imports
        return best, f"one of {len(self.defs)} candidates ({RANKS[top]})"


@lru_cache(maxsize=1 << 16)
def _place(path: str) -> tuple[str, str, int]:
    """A file's folder, module name and value order (``paths.VALUE_ORDER``), once per path: a
    name with thousands of definitions ranks them all on every use."""
    return posixpath.dirname(path), _module(path), VALUE_ORDER[classify(path, "")]


def _module(path: str) -> str:
    """A file's module name as an import names it: its stem (``pkg/util.py`` -> ``util``), or its
    folder's for an index file (``__init__.py``, ``index.ts``, ``mod.rs``)."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem in ("__init__", "index", "mod", "lib", "main"):
        return posixpath.basename(posixpath.dirname(path)) or stem
    return stem


def _lines(store: Store, wanted: dict[str, set[int]]) -> dict[tuple[str, int], str]:
    """The text of each wanted (path, line), from the chunks the index holds (secrets masked)."""
    out: dict[tuple[str, int], str] = {}
    for path, lines in wanted.items():
        rows = store.conn.execute("SELECT start_line, content FROM chunks WHERE path=? ORDER BY start_line", (path,))
        for start, content in rows:
            parts = content.split("\n")
            for line in lines:
                k = line - start
                if 0 <= k < len(parts) and (path, line) not in out:
                    out[path, line] = parts[k].rstrip()[:300]
    return out


def _with_text(store: Store, sites: list[Site]) -> list[Site]:
    wanted: dict[str, set[int]] = {}
    for s in sites:
        wanted.setdefault(s.path, set()).add(s.line)
    text = _lines(store, wanted)
    return [Site(s.path, s.line, s.name, s.kind, text.get((s.path, s.line), ""), s.within, s.target, s.resolution)
            for s in sites]


class Navigator:
    """Answers over one index's symbol tables; ``glob`` and ``language`` keep the sites (and the
    definitions listed) of the paths they match."""

    def __init__(self, store: Store, root: Path, glob: str | None = None, language: str | None = None) -> None:
        self.store = store
        self.root = root
        self.glob = glob
        self.language = language
        self._languages: dict[str, str | None] = {}
        self._imported: dict[str, set[str]] = {}

    def imports_of(self, path: str) -> set[str]:
        """The names ``path`` imports (read once per answer)."""
        if path not in self._imported:
            self._imported[path] = tables.imported_names(self.conn, path)
        return self._imported[path]

    def _keep(self, path: str) -> bool:
        if self.glob and not path_matches(path, self.glob):
            return False
        if self.language:
            if path not in self._languages:
                row = self.conn.execute("SELECT language FROM files WHERE path=?", (path,)).fetchone()
                self._languages[path] = row[0] if row else None
            return self._languages[path] == self.language
        return True

    @property
    def conn(self) -> sqlite3.Connection:
        return self.store.conn

    def _enclosing(self, path: str, line: int, defs: list[DefRecord] | None = None) -> DefRecord | None:
        """The innermost definition of ``path`` that holds ``line``, or one whose name is on it;
        outside every definition (a file's imports, its docstring), the next one below."""
        best: DefRecord | None = None
        after: DefRecord | None = None
        for d in defs if defs is not None else tables.file_definitions(self.conn, path):
            if d.line == line:
                return d
            if d.start_line <= line <= d.end_line and (best is None or d.start_line >= best.start_line):
                best = d
            if d.start_line > line and (after is None or d.start_line < after.start_line):
                after = d
        return best or after

    def target(self, target: str) -> tuple[str, list[DefRecord], DefRecord | None]:
        """``(name, its definitions, the one the target names)`` for ``NAME``, ``Scope.NAME`` or
        ``PATH:LINE`` (the definition at or around that line)."""
        text = target.strip()
        if not text:
            raise CodeSightError("say what to follow: a name, or PATH:LINE", exit_code=2)
        where = parse_target(text, self.root) if ("/" in text or ":" in text or "." in text) else None
        if where is not None:
            path, line = where
            defs = tables.file_definitions(self.conn, path)
            if not defs and not (self.root / path).is_file():
                raise NotHereError(f"{path}: no such file in {self.root}")
            if not defs:
                raise CodeSightError(f"{path}: no definitions indexed there (a file of a language without a grammar,"
                                     " or not indexed)", exit_code=1)
            found = self._enclosing(path, line or defs[0].line, defs)
            if found is None:
                raise CodeSightError(f"{path}:{line}: no definition there", exit_code=1)
            return found.name, tables.definitions(self.conn, found.name), found
        defs = tables.definitions(self.conn, text)
        if not defs and "." in text.strip(".") and " " not in text:  # Scope.name
            scope, name = text.rsplit(".", 1)
            inner = [d for d in tables.definitions(self.conn, name)
                     if d.scope == scope or d.scope.endswith("." + scope)]
            if inner:
                return name, tables.definitions(self.conn, name), inner[0] if len(inner) == 1 else None
            return name, [], None
        return text, defs, defs[0] if len(defs) == 1 else None

    def definitions(self, target: str) -> Navigation:
        name, defs, chosen = self.target(target)
        ordered = sorted(defs, key=lambda d: (VALUE_ORDER[classify(d.path, "")], d.path, d.line))
        if chosen is not None:
            ordered = [chosen] + [d for d in ordered if d != chosen]
        return Navigation("definitions", target, name, _symbol(chosen) if chosen else None,
                          [_symbol(d) for d in ordered if self._keep(d.path)], pinned=chosen is not None)

    def references(self, target: str, limit: int = MAX_SITES, kind: str | None = None,
                   action: str = "references") -> Navigation:
        """Every use of the name; where the target names one definition (PATH:LINE, or a name with
        one), uses that resolve to another one are left out."""
        name, defs, chosen = self.target(target)
        nav = Navigation(action, target, name, _symbol(chosen) if chosen else None, [_symbol(d) for d in defs],
                         pinned=chosen is not None and (len(defs) == 1 or target.strip() != name))
        resolver = Resolver(self.conn, name, defs, self.imports_of)
        # A declaration (a .pyi stub, a .d.ts, a header) stands for its implementations: their uses are its
        declares = chosen is not None and classify(chosen.path, "") == DECLARATIONS
        sites: list[Site] = []
        for r, around in tables.references_within(self.conn, name, kind):
            best, how = resolver.verdict(r.path)
            if chosen is not None and best is not None and best != chosen and how == "resolved" and not (
                    declares and classify(best.path, "") != DECLARATIONS):
                continue  # it means another definition of the name
            if chosen is not None and how != "resolved" and best == chosen:
                how = "resolved" if len(defs) == 1 else how
            sites.append(Site(r.path, r.line, name, r.kind, "", _symbol(around) if around else None, None,
                              how if len(defs) > 1 else ("resolved" if defs else "not defined here")))
        if action == "references":  # the definitions' own lines, so that "every place it is named" holds
            pinned = [chosen] if chosen is not None else defs
            sites += [Site(d.path, d.line, name, "definition", "", None, _symbol(d), "resolved") for d in pinned]
        sites = [s for s in sites if self._keep(s.path)]
        sites.sort(key=lambda s: (VALUE_ORDER[classify(s.path, "")], s.path, s.line))
        nav.truncated = len(sites) > limit
        nav.sites = _with_text(self.store, sites[:limit])
        return nav

    def callers(self, target: str, limit: int = MAX_SITES) -> Navigation:
        """Every call of the name, each with the definition it is made from (the caller)."""
        return self.references(target, limit, kind="call", action="callers")

    def callees(self, target: str, limit: int = MAX_SITES) -> Navigation:
        """What a definition calls (the calls in it and in the definitions inside it), each with the
        definition it resolves to where the index has one."""
        name, defs, chosen = self.target(target)
        if chosen is None and defs:
            chosen = sorted(defs, key=lambda d: (VALUE_ORDER[classify(d.path, "")], d.path, d.line))[0]
        nav = Navigation("callees", target, name, _symbol(chosen) if chosen else None, [_symbol(d) for d in defs],
                         pinned=chosen is not None and (len(defs) == 1 or target.strip() != name))
        if chosen is None:
            return nav
        inside = [d for d in tables.file_definitions(self.conn, chosen.path)
                  if chosen.start_line <= d.start_line and d.end_line <= chosen.end_line]
        lines = [d.line for d in inside] or [chosen.line]
        calls = tables.file_references(self.conn, chosen.path, within=lines, kind="call")
        by_line = {d.line: d for d in inside}
        sites: list[Site] = []
        seen: set[str] = set()
        resolvers: dict[str, Resolver] = {}
        for r in calls:
            if r.name in seen:  # each callee once, at its first call
                continue
            seen.add(r.name)
            resolver = resolvers.get(r.name) or resolvers.setdefault(r.name, Resolver(self.conn, r.name, None,
                                                                                     self.imports_of))
            best, how = resolver.verdict(chosen.path)
            w = by_line.get(r.within)
            sites.append(Site(r.path, r.line, r.name, "call", "", _symbol(w) if w else None,
                              _symbol(best) if best else None, how))
        sites = [s for s in sites if self._keep(s.target.path if s.target else s.path)]
        nav.truncated = len(sites) > limit
        nav.sites = _with_text(self.store, sites[:limit])
        return nav

    def follow(self, action: str, target: str, limit: int = MAX_SITES) -> Navigation:
        if action not in ACTIONS:
            raise CodeSightError(f"{action}: not one of {', '.join(ACTIONS)}", exit_code=2)
        if action == "definitions":
            return self.definitions(target)
        if action == "callees":
            return self.callees(target, limit)
        if action == "callers":
            return self.callers(target, limit)
        return self.references(target, limit)
