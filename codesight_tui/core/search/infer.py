"""What a value is, as far as the code's own lines say (issue 66): the class a receiver holds, the
class a function returns, a field's class, a chain's (``t.previewer.following``,
``Schema().load``, ``cl.lastChunk().IsFull``), a Go package's variable's type, and an alias that
names another definition (``ib = attrib``, ``Str = String``). ``navigate.Navigator`` reads them from
the index's chunks and symbol tables, once per answer; where the lines do not say, the answer is "",
and the call stays "one of N candidates".
"""

from __future__ import annotations

import platform
import posixpath
import re
import sqlite3
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

from codesight_tui.core.ingest.paths import DECLARATIONS, VALUE_ORDER, classify
from codesight_tui.core.search.calls import (
    CLASS_KINDS,
    SELF_NAMES,
    assigns,
    bases_in,
    field_type,
    go_builds,
    go_host,
    go_receiver,
    returned_by,
    returned_in,
    typed_in,
)
from codesight_tui.core.store import symbols as tables
from codesight_tui.core.store.symbols import DefRecord

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store


@lru_cache(maxsize=1 << 16)
def place(path: str) -> tuple[str, str, int]:
    """A file's folder, module name and value order (``paths.VALUE_ORDER``), once per path: a
    name with thousands of definitions ranks them all on every use."""
    return posixpath.dirname(path), module_name(path), VALUE_ORDER[classify(path, "")]


def module_name(path: str) -> str:
    """A file's module name as an import names it: its stem (``pkg/util.py`` -> ``util``), or its
    folder's for an index file (``__init__.py``, ``index.ts``, ``mod.rs``)."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem in ("__init__", "index", "mod", "lib", "main"):
        return posixpath.basename(posixpath.dirname(path)) or stem
    return stem


# A Go package-level value's declaration: `var Name T`, `Name T = ...`, `Name = T(...)` or `Name =
# &T{...}`; a line that is the name alone (or `Name = iota`) inside `const (` repeats the type above.
_GO_VALUE = r"^\s*(?:var\s+|const\s+)?{n}\s+(?:\*\s*)?(?:[\w$]+\.)?([A-Za-z_][\w$]*)\s*(?:=|$|//)"
_GO_MADE = r"^\s*(?:var\s+|const\s+)?{n}\s*=\s*&?(?:[\w$]+\.)?([A-Za-z_][\w$]*)\s*[({{]"
TYPE_DEPTH = 24  # a value typed by another's, that by another's, ...: followed this deep at most
PASSED_DEPTH = 3  # a parameter is followed through at most this many callers' parameters
PASSED_CALLS = 50  # and typed by its calls only where it has at most this many
_HOST = go_host(sys.platform, platform.machine())  # the build tags Go's checker holds here
_FROM = re.compile(r"\bfrom\s+(\.*[\w.]*)\s+import\b")
_ALIAS = r"^{n}\s*=\s*(?:[A-Za-z_$][\w$]*\s*=\s*)*((?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)\s*(?:#.*)?$"


class Types:
    """The symbol tables and chunks one answer reads, with what it has read kept: each file's
    language, imports and definitions, and each receiver's class."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._languages: dict[str, str | None] = {}
        self._imported: dict[str, set[str]] = {}
        self._file_defs: dict[str, list[DefRecord]] = {}
        self._types: dict[tuple[str, int, str], str] = {}
        self._files: dict[str, dict[int, str]] = {}
        self._passing = 0  # how deep ``passed_type`` is: a parameter passed on through callers
        self._depth = 0  # how deep ``type_of`` is: a value typed by another value's type
        self._local: dict[DefRecord, bool] = {}
        self._classes: dict[str, list[DefRecord]] = {}

    def text(self, path: str, first: int, last: int, sep: str = "\n") -> str:
        """Lines ``first`` to ``last`` of ``path`` as the index's chunks hold them (secrets masked;
        each line stripped on the right, its first 300 characters), the file's chunks read once per
        answer."""
        if path not in self._files:
            lines: dict[int, str] = {}
            rows = self.conn.execute("SELECT start_line, content FROM chunks WHERE path=? ORDER BY start_line", (path,))
            for start, content in rows:
                for k, row in enumerate(content.split("\n")):
                    lines.setdefault(start + k, row.rstrip()[:300])
            self._files[path] = lines
        got = self._files[path]
        return sep.join(got.get(k, "") for k in range(first, last + 1))

    @property
    def conn(self) -> sqlite3.Connection:
        return self.store.conn

    def imports_of(self, path: str) -> set[str]:
        """The names ``path`` imports (read once per answer)."""
        if path not in self._imported:
            self._imported[path] = tables.imported_names(self.conn, path)
        return self._imported[path]

    def language_of(self, path: str) -> str | None:
        """A file's language, as the index has it (read once per answer)."""
        if path not in self._languages:
            row = self.conn.execute("SELECT language FROM files WHERE path=?", (path,)).fetchone()
            self._languages[path] = row[0] if row else None
        return self._languages[path]

    def defs_in(self, path: str) -> list[DefRecord]:
        if path not in self._file_defs:
            self._file_defs[path] = tables.file_definitions(self.conn, path)
        return self._file_defs[path]

    def builds_here(self, path: str) -> bool:
        """Whether Go builds ``path`` on this machine (``calls.go_builds``: its name, its
        ``//go:build`` line)."""
        key = (path, 0, "builds")
        if key not in self._types:
            head = self.text(path, 1, 40).split("\npackage ", 1)[0]
            self._types[key] = "1" if go_builds(path, head, _HOST) else ""
        return bool(self._types[key])

    def built(self, defs: list[DefRecord]) -> list[DefRecord]:
        """``defs`` without the Go definitions of files not built here, where a package defines the
        same name in a file that is (``light_windows.go``'s beside ``light_unix.go``'s)."""
        same: dict[tuple[str, str, str], list[DefRecord]] = {}
        for d in defs:
            if self.language_of(d.path) == "go":
                same.setdefault((place(d.path)[0], d.scope, d.name), []).append(d)
        drop: set[DefRecord] = set()
        for group in same.values():
            here = [d for d in group if self.builds_here(d.path)] if len(group) > 1 else group
            if here:
                drop.update(d for d in group if d not in here)
        return [d for d in defs if d not in drop] if drop else defs

    def is_method(self, d: DefRecord) -> bool:
        """Whether ``d`` is called through a receiver or its type: a function of a class, struct,
        trait or impl, or a Go method (whose scope is its receiver's type)."""
        if not d.scope:
            return False
        if self.language_of(d.path) == "go":
            return True
        owner = d.scope.rsplit(".", 1)[-1]
        return any(
            e.name == owner and e.kind in CLASS_KINDS and e.start_line <= d.start_line <= e.end_line
            for e in self.defs_in(d.path)
            if e != d
        )

    def is_local(self, d: DefRecord) -> bool:
        """Whether ``d`` is defined inside a function (a closure, a test's own class), so that only
        code in that function can name it bare."""
        if not d.scope or self.language_of(d.path) == "go":
            return False
        if d not in self._local:  # once per definition: a name may have thousands, used thousands of times
            owner = d.scope.rsplit(".", 1)[-1]
            self._local[d] = any(
                e.name == owner and e.kind not in CLASS_KINDS and e.start_line < d.start_line <= e.end_line
                for e in self.defs_in(d.path)
                if e != d
            )
        return self._local[d]

    def visible(self, d: DefRecord, here: str, line: int) -> bool:
        """Whether code at ``here``:``line`` can name ``d`` bare: anything not local to a
        function, and what is local to one from inside that function (its nested functions too)."""
        if not self.is_local(d):
            return True
        if d.path != here or not line:
            return False
        owner = d.scope.rsplit(".", 1)[-1]
        return any(
            e.name == owner and e.start_line < d.start_line <= e.end_line and e.start_line <= line <= e.end_line
            for e in self.defs_in(d.path)
            if e != d
        )

    def assigned_in(self, caller: DefRecord, name: str, line: int) -> bool:
        """Whether the caller binds ``name`` itself before ``line`` (``C = make_class(...)``, a
        parameter): a value of its own, which shadows any definition of that name."""
        if not line or caller.start_line >= line:
            return False
        key = (caller.path, caller.start_line, "=" + name)
        if key not in self._types:
            self._types[key] = "1" if assigns(self.text(caller.path, caller.start_line, line - 1), name) else ""
        return bool(self._types[key])

    def near(self, found: list[DefRecord], here: str) -> list[DefRecord]:
        """Of several definitions, the ones ``here`` means, nearest first: those in its file, else
        in a module it imports by name, else in a package (a folder) it imports or, in Go, its own."""
        folder = place(here)[0]
        go = self.language_of(here) == "go"
        imported = self.imports_of(here)
        for tier in (
            [d for d in found if d.path == here],
            [d for d in found if place(d.path)[1] in imported],
            [
                d
                for d in found
                if posixpath.basename(place(d.path)[0]) in imported or (go and place(d.path)[0] == folder)
            ],
        ):
            if tier:
                return tier
        return []

    def classes(self, name: str) -> list[DefRecord]:
        """The classes (structs, traits, ...) named ``name`` (read once per answer)."""
        if name not in self._classes:
            self._classes[name] = [d for d in tables.definitions(self.conn, name) if d.kind in CLASS_KINDS]
        return self._classes[name]

    def class_def(self, name: str, here: str, line: int = 0) -> DefRecord | None:
        """The class (struct, trait, ...) named ``name``: the one in ``here`` or whose module it
        imports where several are, else the only one; code at ``line`` sees its function's own class
        first (a test's ``class MySchema(Schema)``, one in each test)."""
        found = self.classes(name)
        if len(found) > 1 and line:
            local = [d for d in found if d.path == here and self.is_local(d) and self.visible(d, here, line)]
            if local:
                return max(local, key=lambda d: d.start_line)
            found = [d for d in found if not self.is_local(d)]
        if len(found) > 1:
            near = self.near(found, here)
            found = near if len(near) == 1 else found
        return found[0] if len(found) == 1 else None

    def bases_of(self, name: str, here: str, line: int = 0) -> list[str]:
        """The classes ``name`` extends, read off its definition's line (``class A(B, mod.C):``,
        ``class A extends B implements C``, ``class A : B()``)."""
        d = self.class_def(name, here, line)
        if d is None:
            return []
        return bases_in(self.text(d.path, d.line, d.line + 2, " "), name, self.language_of(d.path))

    def methods_of(
        self, class_name: str, methods: list[DefRecord], here: str, depth: int = 0, line: int = 0
    ) -> list[DefRecord]:
        """Of ``methods``, the ones ``class_name`` (as seen from ``here``:``line``) has: its own,
        else its nearest base's."""
        own = [m for m in methods if m.scope.rsplit(".", 1)[-1] == class_name]
        if self.language_of(here) != "go" and len(self.classes(class_name)) > 1:
            d = self.class_def(class_name, here, line)  # several classes of that name: the one meant
            if d is None:
                return []
            own = [m for m in own if m.path == d.path and d.start_line <= m.start_line <= d.end_line]
        if own or depth >= 6:
            return own
        for base in self.bases_of(class_name, here, line):
            found = self.methods_of(base, methods, here, depth + 1)
            if found:
                return found
        return []

    def type_of(self, receiver: str, caller: DefRecord, line: int) -> str:
        """The class a receiver holds where the caller says so itself: a constructor assigned to it
        (``r = Reader(...)``, ``r := &Reader{...}``, ``r = new Reader(``), an annotation (``r:
        Reader``, ``r *Reader`` in Go's parameters), or a function of the repository whose
        definition says what it returns (``r := newReader()``), in the caller's lines up to the call."""
        key = (caller.path, caller.start_line, receiver)
        if key not in self._types:
            if self._depth >= TYPE_DEPTH:
                return ""  # a = b.x, b = c.y, ...: a chain of values this long is not followed
            self._types[key] = ""  # while it is worked out: `x = x.next` names no class
            self._depth += 1
            try:
                self._types[key] = self._typed(receiver, caller, line)
            finally:
                self._depth -= 1
        return self._types[key]

    def _typed(self, receiver: str, caller: DefRecord, line: int) -> str:
        """``type_of``, worked out."""
        text = self.text(caller.path, caller.start_line, max(caller.start_line, line))
        found = typed_in(text, receiver, self.language_of(caller.path))
        if found.startswith("call:"):  # call:NAME, or call:PACKAGE.NAME
            package, _, name = found[5:].rpartition(".")
            found = self.called_type(name, caller.path, line, package)
        elif found.startswith("chain:"):
            found = self.chain_type(found[6:], caller, line, self.class_of(caller))
        elif found.startswith("range:"):  # Go: what a range over a slice or a map gives
            over = found[6:]
            over = (
                self.chain_type(over, caller, line, self.class_of(caller))
                if "." in over or over.endswith("()")
                else self.type_of(over, caller, line)
            )
            found = over[2:] if over.startswith("[]") else ""
        if not found and self.language_of(caller.path) == "python":
            found = self.passed_type(receiver, caller)
        return found

    def passed_type(self, param: str, d: DefRecord) -> str:
        """The class every call of ``d`` in the repository passes as its parameter ``param``, where
        the caller's own lines type what it passes (``error_store=error_store``, itself annotated
        ``error_store: ErrorStore``), as Jedi infers a parameter from its calls; "" where any call
        passes an unknown or another one, or the name is defined twice."""
        params = _parameters(self.text(d.path, d.line, min(d.end_line, d.line + 30), " "))
        if param not in params or len(tables.definitions(self.conn, d.name)) != 1 or self._passing >= PASSED_DEPTH:
            return ""
        position = params.index(param) - (1 if params[:1] in (["self"], ["cls"]) else 0)
        calls = tables.references(self.conn, d.name, kind="call")
        if len(calls) > PASSED_CALLS:
            return ""  # what every call passes: too many to read for one answer
        found: set[str] = set()
        self._passing += 1
        try:
            for r in calls:
                site = next((e for e in self.defs_in(r.path) if e.line == r.within), None)
                args = _arguments(self.text(r.path, r.line, r.line + 12), d.name)
                passed = args.get(param, args.get(str(position), "")) if args is not None else ""
                typed = (
                    self.type_of(passed, site, r.line)
                    if site is not None and re.fullmatch(r"[A-Za-z_]\w*", passed)
                    else ""
                )
                if not typed:
                    return ""
                found.add(typed)
        finally:
            self._passing -= 1
        return found.pop() if len(found) == 1 else ""

    def called_type(self, name: str, here: str, line: int = 0, package: str = "") -> str:
        """The class a call of ``name`` makes: ``name`` itself where it is a class (a constructor,
        Go's conversion ``EventType(0)``), else what the one function of that name ``here`` can
        mean returns. ``package``: the module or package the call names (``json.NewEncoder()``:
        only the repository's own package json, never another's of that name)."""
        made = [d for d in tables.definitions(self.conn, name) if not package or self.in_package(d.path, package)]
        if any(d.kind in CLASS_KINDS for d in made):
            return name if self.class_def(name, here, line) in made else ""
        funcs = [d for d in made if not self.is_method(d)]
        if len(funcs) > 1:
            funcs = self.near(funcs, here)
        return self.returns(funcs[0]) if len(funcs) == 1 else ""

    def in_package(self, path: str, package: str) -> bool:
        """Whether ``path`` is of the module or package a qualified name names: Go's by its
        ``package`` clause (a module's root folder has no name of its own), else its module's
        name or its folder's."""
        if self.language_of(path) == "go":
            key = (path, 0, "package")
            if key not in self._types:
                m = re.search(r"(?m)^package\s+([A-Za-z_]\w*)", self.text(path, 1, 60))
                self._types[key] = m.group(1) if m else ""
            return self._types[key] == package
        return package in (place(path)[1], posixpath.basename(place(path)[0]))

    def returns(self, d: DefRecord) -> str:
        """The class a function returns: as its signature says, else as its returns make one
        (a body of up to 60 lines is read)."""
        language = self.language_of(d.path)
        said = returned_by(self.head(d), language)
        if said:
            return said
        body = self.text(d.path, d.line, min(d.end_line, d.line + 60))
        returned = re.findall(r"(?m)^\s*return\b\s*(.*?)\s*$", body)
        if returned and d.scope and set(returned) == {"self"} and self.is_method(d):
            return d.scope.rsplit(".", 1)[-1]  # a builder's method: its own class
        return returned_in(body, language)

    def head(self, d: DefRecord) -> str:
        """A definition's first lines (its signature)."""
        return self.text(d.path, d.line, min(d.end_line, d.line + 4), " ")

    def chain_type(self, chain: str, caller: DefRecord, line: int, own_class: str) -> str:
        """The class at the end of a receiver chain: its first part's (``self``, a Go method's own
        receiver, a call ``Schema()``, a value ``type_of`` knows, or a package's value or call
        ``tui.Start``), then each field's (``field_type``) or method's result (``returns``)."""
        parts = chain.split(".")
        first = parts[0]
        here = caller.path
        go = self.language_of(here) == "go"
        own = go_receiver(self.head(caller))[0] if caller.scope and go else ""
        if first.endswith("()"):
            current = self.called_type(first[:-2], here, line)
        elif first in SELF_NAMES or (own and first == own):
            current = own_class
        else:
            current = self.type_of(first, caller, line)
            if not current and len(parts) > 1 and self.is_package(first, caller, line):
                nxt = parts[1]  # pkg.New(), pkg.Start, mod.Schema()
                current = (
                    self.called_type(nxt[:-2], here, line, first)
                    if nxt.endswith("()")
                    else self.value_type(nxt, first, here)
                )
                parts = parts[1:]
        for part in parts[1:]:
            current = self.member_type(current, part, here)
        return current

    def is_package(self, name: str, caller: DefRecord, line: int) -> bool:
        """Whether ``name`` at ``line`` is an imported module or package, not a value of the caller's."""
        if name in self.imports_of(caller.path) and not self.assigned_in(caller, name, line):
            return True
        return self.language_of(caller.path) == "go" and not self.assigned_in(caller, name, line)

    def member_type(self, current: str, part: str, here: str) -> str:
        """The class of ``current``'s field ``part``, or of what its method ``part()`` returns."""
        if not current:
            return ""
        key = (here, 0, f"member:{current}.{part}")
        if key not in self._types:
            self._types[key] = self._member_type(current, part, here)
        return self._types[key]

    def _member_type(self, current: str, part: str, here: str) -> str:
        """``member_type``, worked out."""
        if part.endswith("()"):
            methods = [d for d in tables.definitions(self.conn, part[:-2]) if self.is_method(d)]
            own = self.methods_of(current, methods, here)
            return self.returns(own[0]) if len(own) == 1 else ""
        d = self.class_def(current, here)
        if d is None:
            return ""
        text = self.text(d.path, d.start_line, min(d.end_line, d.start_line + 600))
        return field_type(text, part, self.language_of(d.path))

    def value_type(self, name: str, package: str, here: str) -> str:
        """The type of a Go package's value ``package.name`` (``tui.Start``), where its declaration
        says: ``var Start T``, ``Start T = ...``, ``Start = T(...)``, or a bare ``Start`` in a
        ``const (`` block whose type the lines above it give (``Rune EventType = iota``)."""
        if self.language_of(here) != "go":
            return ""
        key = (package, 0, "value:" + name)
        if key not in self._types:
            found: set[str] = set()
            for r in tables.references(self.conn, name):
                if self.language_of(r.path) != "go" or not self.in_package(r.path, package):
                    continue
                said = self._declared(r.path, r.line, name)
                if said:
                    found.add(said)
            self._types[key] = found.pop() if len(found) == 1 else ""
        return self._types[key]

    def _declared(self, path: str, line: int, name: str) -> str:
        rows = self.text(path, max(1, line - 400), line).split("\n")
        n = re.escape(name)
        last = rows[-1]
        if not re.match(r"^(?:var|const)\s", last):  # else inside `const (` or `var (`, not a struct's field
            opener = next((row for row in reversed(rows[:-1]) if re.match(r"^\S", row)), "")
            if not re.match(r"^(?:const|var)\s*\(", opener):
                return ""
        for pattern in (_GO_VALUE, _GO_MADE):
            m = re.match(pattern.format(n=n), last)
            if m:
                return m.group(1)
        if not re.match(rf"^\s*{n}\s*(?:=\s*iota\b.*)?(?://.*)?$", last):
            return ""
        for row in reversed(rows[:-1]):  # the const block's last typed line above
            if re.match(r"^\S", row):
                return ""
            m = re.match(r"^\s*[A-Za-z_][\w$]*\s+(?:[\w$]+\.)?([A-Za-z_][\w$]*)\s*=", row)
            if m:
                return m.group(1)
        return ""

    def alias_of(self, name: str, receiver: str, here: str) -> str:
        """What a module-level alias names (``ib = attr = attrib`` in attr/__init__.py, ``Str =
        String`` in fields.py): the one such line among the files ``receiver`` (a module, or ""
        for a name imported bare) can mean."""
        key = (here, 0, f"alias:{receiver}.{name}")
        if key not in self._types:
            found: set[tuple[str, str]] = set()
            for r in tables.references(self.conn, name):
                if receiver and receiver not in (place(r.path)[1], posixpath.basename(place(r.path)[0])):
                    continue
                if not receiver and r.path != here and place(r.path)[1] not in self.imports_of(here):
                    continue
                row = self.text(r.path, r.line, r.line)
                m = re.match(_ALIAS.format(n=re.escape(name)), row)
                if m and m.group(1).split(".")[-1] != name:
                    found.add((r.path, m.group(1).split(".")[-1]))
            # one name (a stub's line beside its module's says the same): from the module, not the stub
            said = sorted(found, key=lambda f: classify(f[0], "") == DECLARATIONS)
            self._types[key] = "\n".join(said[0]) if len({f[1] for f in found}) == 1 else ""
        return self._types[key]

    def imported_from(self, name: str, here: str) -> str:
        """The module an import statement of ``here`` takes ``name`` from, as a path without its
        suffix (``from attr import asdict`` -> ``attr``; ``from ._funcs import asdict`` in
        src/attr/__init__.py -> ``src/attr/_funcs``; ``import attr`` -> ``attr``); "" where none does."""
        key = (here, 0, "from:" + name)
        if key not in self._types:
            said = ""
            for r in tables.file_references(self.conn, here, kind="import"):
                if r.name != name:
                    continue
                rows = self.text(here, max(1, r.line - 30), r.line).split("\n")
                plain = re.match(rf"\s*import\s+((?:[\w]+\.)*{re.escape(name)})\b", rows[-1])
                if plain:
                    said = plain.group(1)
                    break
                for k in range(len(rows) - 1, -1, -1):  # the `from X import (` this name's line belongs to
                    m = _FROM.search(rows[k])
                    if m:
                        said = m.group(1)
                        break
                    if k < len(rows) - 1 and ")" in rows[k]:
                        break
                break
            if said.startswith("."):
                dots = len(said) - len(said.lstrip("."))
                base = posixpath.dirname(here)
                for _ in range(dots - 1):
                    base = posixpath.dirname(base)
                rest = said.lstrip(".").replace(".", "/")
                said = f"{base}/{rest}" if rest else base
            else:
                said = said.replace(".", "/")
            self._types[key] = said
        return self._types[key]

    def through(self, name: str, module: str, found: list[DefRecord], depth: int = 0) -> list[DefRecord]:
        """Of ``found``, the definitions ``module`` (a path without its suffix, as ``imported_from``
        gives it) names: the module's own, or, for a package, what its ``__init__.py`` imports
        under that name (``attr`` -> ``attr/_funcs.py``'s ``asdict``)."""
        if not module or depth > 3:
            return []

        def named(stem: str) -> bool:
            return stem == module or stem.endswith("/" + module)

        own = [
            d
            for d in found
            if named(posixpath.splitext(d.path)[0])
            or (posixpath.basename(d.path).startswith("__init__.") and named(posixpath.dirname(d.path)))
        ]
        if own:
            return own
        folders = set()  # a package: what its __init__.py imports under that name
        for d in found:
            folder = posixpath.dirname(d.path)
            while folder and folder not in folders:
                folders.add(folder)
                folder = posixpath.dirname(folder)
        for folder in sorted(folders):
            if named(folder):
                onward = self.imported_from(name, folder + "/__init__.py")
                if onward:
                    return self.through(name, onward, found, depth + 1)
        return []

    def class_of(self, caller: DefRecord | None) -> str:
        """The class a caller's ``self`` is of: a method's, or that of the method a nested function
        is in; "" outside any."""
        if caller is None or not caller.scope:
            return ""
        if self.is_method(caller):
            return caller.scope.rsplit(".", 1)[-1]
        parts = caller.scope.split(".")
        if len(parts) >= 2:
            method = next(
                (
                    e
                    for e in self.defs_in(caller.path)
                    if e.name == parts[-1] and e.start_line <= caller.start_line <= e.end_line
                ),
                None,
            )
            if method is not None and self.is_method(method):
                return parts[-2]
        return ""


def _split(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and strings."""
    parts, depth, quote, start = [], 0, "", 0
    for k, c in enumerate(text):
        if quote:
            quote = "" if c == quote and text[k - 1] != "\\" else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _inside(text: str, at: int) -> str | None:
    """The text between the bracket at ``at`` and the one that closes it; None where it is not closed."""
    depth = 0
    for k in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return text[at + 1 : k]
    return None


def _parameters(head: str) -> list[str]:
    """A Python function's parameters' names, in order (``*``, ``/``, ``*args`` and ``**kw`` left out)."""
    m = re.search(r"\bdef\s+\w+\s*\(", head)
    inside = _inside(head, m.end() - 1) if m else None
    if inside is None:
        return []
    names = [re.split(r"[:=]", p, maxsplit=1)[0].strip() for p in _split(inside)]
    return [n for n in names if re.fullmatch(r"[A-Za-z_]\w*", n)]


def _arguments(text: str, name: str) -> dict[str, str] | None:
    """The arguments of the first call of ``name`` in ``text``: each keyword's, and each positional's
    under its index ("0", "1", ...); None where the call is not there whole."""
    m = re.search(rf"(?<![\w$]){re.escape(name)}\s*\(", text)
    inside = _inside(text, m.end() - 1) if m else None
    if inside is None:
        return None
    out: dict[str, str] = {}
    for k, part in enumerate(_split(inside)):
        key, eq, value = part.partition("=")
        if eq and re.fullmatch(r"\s*[A-Za-z_]\w*\s*", key) and not value.startswith("="):
            out[key.strip()] = value.strip()
        elif not part.startswith("*"):
            out[str(k)] = part
    return out
