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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, NotHereError, UsageError
from codesight_tui.core.ingest.paths import DECLARATIONS, VALUE_ORDER, classify
from codesight_tui.core.search.calls import (
    BUILTINS,
    IMPLICIT_SELF,
    UNKNOWN,
    CallForm,
    call_form,
    go_receiver,
)
from codesight_tui.core.search.infer import Types, place
from codesight_tui.core.search.related import parse_target
from codesight_tui.core.store import symbols as tables
from codesight_tui.core.store.store import path_matches
from codesight_tui.core.store.symbols import DefRecord, RefRecord

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
        return {
            "action": self.action,
            "target": self.target,
            "name": self.name,
            "resolution": self.resolution,
            "symbol": self.symbol.to_dict() if self.symbol else None,
            "candidates": [c.to_dict() for c in self.candidates],
            "sites": [s.to_dict() for s in self.sites],
            "truncated": self.truncated,
        }


class Resolver:
    """Where one name's uses resolve: its definitions, ranked for the file a use is in by what that
    file imports (``imports_of``: a file's imported names, one row read per file), and, for a call
    whose form is known (``calls.call_form``), narrowed by it (``Navigator`` tells each file's
    language and which definitions are methods)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        name: str,
        defs: list[DefRecord] | None,
        imports_of: Callable[[str], set[str]],
        nav: Navigator | None = None,
    ) -> None:
        self.name = name
        self.defs = defs if defs is not None else tables.definitions(conn, name)
        self.imports_of = imports_of
        self.nav = nav
        self._split: tuple[list[DefRecord], list[DefRecord]] | None = None
        self._plain: list[DefRecord] = []  # the distinct definitions that are no methods

    def _sorted(self, nav: Navigator) -> tuple[list[DefRecord], list[DefRecord]]:
        """``(the distinct definitions, the methods among them)``, once per name: they are the same
        for every use, and a name can have thousands of definitions and of uses."""
        if self._split is None:
            defs = nav.built(_distinct(self.defs))
            methods = [d for d in defs if nav.is_method(d)]
            self._split = defs, methods
            called = set(methods)
            self._plain = [d for d in defs if d not in called]
        return self._split

    def _imports(self, here: str, name: str) -> bool:
        return name in self.imports_of(here)

    def rank(self, d: DefRecord, here: str) -> int:
        if d.path == here:
            return 0
        folder, module, _ = place(d.path)
        if folder == place(here)[0]:
            return 1
        # its module, or its package (``from attr import assoc`` for attr/_funcs.py's assoc)
        if self._imports(here, module) or self._imports(here, posixpath.basename(folder)):
            return 2
        return 3

    def verdict(
        self, here: str, form: CallForm = UNKNOWN, caller: DefRecord | None = None, line: int = 0
    ) -> tuple[DefRecord | None, str]:
        """The definition a use in ``here`` (at ``line``, in ``caller``) most likely means, and
        how sure that is."""
        best, how, _ = self.judge(here, form, caller, line)
        return best, how

    def judge(
        self, here: str, form: CallForm = UNKNOWN, caller: DefRecord | None = None, line: int = 0
    ) -> tuple[DefRecord | None, str, list[DefRecord]]:
        """``verdict``, with every definition the use may mean (empty for a built-in)."""
        best, how, found = self._judge(here, form, caller, line)
        if best is not None and classify(best.path, "") == DECLARATIONS:
            # a stub (.pyi, .d.ts, a header) names what its implementation defines: that is the answer
            made = [
                d
                for d in self.defs
                if d.name == best.name and d.scope == best.scope and classify(d.path, "") != DECLARATIONS
            ]
            if len(made) == 1:
                best = made[0]
                found = found + [best] if best not in found else found
        return best, how, found

    def _judge(
        self, here: str, form: CallForm, caller: DefRecord | None, line: int
    ) -> tuple[DefRecord | None, str, list[DefRecord]]:
        nav = self.nav
        if not self.defs:
            if nav is not None and form.kind == "bare" and self.name in BUILTINS.get(nav.language_of(here) or "", ()):
                return None, "built-in", []
            if nav is not None and form.kind in ("bare", "member") and nav.language_of(here) == "python":
                return self._alias(nav, form, here)
            return None, "not defined here", []
        if nav is None or form.kind == "unknown":  # as the name and the file's imports say
            best, how = self._ranked(self.defs, here, nav.language_of(here) if nav is not None else None)
            return best, how, self.defs
        language = nav.language_of(here)
        defs, methods = self._sorted(nav)
        # a function or class defined inside another function is seen from inside that one only
        plain = [d for d in self._plain if nav.visible(d, here, line)]
        if form.kind == "bare" and caller is not None and nav.assigned_in(caller, self.name, line):
            return None, "a local value", []  # C = make_class(...); C(): not a definition's name
        if form.kind == "bare":
            local = [d for d in plain if nav.is_local(d)]
            if local:  # the innermost: a closure, a test's own class C
                near = max(local, key=lambda d: d.start_line)
                return near, "resolved", [near]
        own_class = nav.class_of(caller)
        mine = nav.methods_of(own_class, methods, here, line=line) if own_class else []
        if form.kind == "super":
            return self._super(nav, own_class, methods, here)
        if form.kind == "bare":
            if language in IMPLICIT_SELF and mine:  # Java's helper() in class Box: Box.helper
                best, how = self._ranked(mine, here, language)
                return best, how, mine
            if (
                self.name in BUILTINS.get(language or "", ())
                and not any(d.path == here for d in plain)
                and self.name not in self.imports_of(here)
            ):
                return None, "built-in", []
            # In Python, JavaScript, Go, Rust, ... a method is called through a receiver, never bare.
            found = plain + (methods if language in IMPLICIT_SELF else [])
            if not found:
                return None, "not defined here", []
            best, how = self._ranked(found, here, language)
            return best, how, found
        if form.kind == "self":
            if len(mine) == 1:
                return mine[0], "resolved", mine
            found = mine or methods or defs
            best, _ = self._ranked(found, here, None)
            return best, f"one of {len(found)} candidates (a method of its class or a base)", found
        return self._member(nav, form, caller, line, here, language, defs, methods, plain, own_class)

    def _member(
        self,
        nav: Navigator,
        form: CallForm,
        caller: DefRecord | None,
        line: int,
        here: str,
        language: str | None,
        defs: list[DefRecord],
        methods: list[DefRecord],
        plain: list[DefRecord],
        own_class: str,
    ) -> tuple[DefRecord | None, str, list[DefRecord]]:
        """A call through a receiver that is neither ``self`` nor ``super()``: through a module or
        a type, or a value whose class the caller's own lines say (``typed_in``, ``chain_type``)."""
        receiver = form.receiver
        typed_as = ""
        if caller is not None and (receiver or form.chain):
            typed_as = (
                nav.type_of(receiver, caller, line) if receiver else nav.chain_type(form.chain, caller, line, own_class)
            )
        if typed_as:  # schema = UserSchema(); schema.load(...): UserSchema's load, or a base's
            own = nav.methods_of(typed_as, methods, here, line=line)
            if len(own) == 1:
                return own[0], "resolved", own
        # cells.cell_len(): the module a file imports; util.Width() in Go: the package (a folder) named
        # so, where the caller binds no value of that name (Go's imports are paths, not names)
        if receiver and (
            self._imports(here, receiver)
            or (language == "go" and caller is not None and not nav.assigned_in(caller, receiver, line))
        ):
            named = [d for d in plain if receiver in (place(d.path)[1], posixpath.basename(place(d.path)[0]))]
            if len(named) > 1 and language == "python":  # attr.astuple(): what the package attr names so
                named = nav.through(self.name, nav.imported_from(receiver, here), named) or named
            if len(named) == 1:
                return named[0], "resolved", named
        if receiver[:1].isupper():  # Matcher.scan(), Foo::new(): a type's own function, or its base's
            typed = [d for d in defs if d.scope.rsplit(".", 1)[-1] == receiver]
            if not typed and caller is not None and not nav.assigned_in(caller, receiver, line):
                typed = (
                    nav.methods_of(receiver, methods, here, line=line) if nav.class_def(receiver, here, line) else []
                )
            if len(typed) == 1:
                return typed[0], "resolved", typed
        found = methods or defs  # a value's method: which, its type would say, and the index has none
        best, _ = self._ranked(found, here, None)
        return best, f"one of {len(found)} candidates (the receiver's type is not known)", found

    def _alias(self, nav: Navigator, form: CallForm, here: str) -> tuple[DefRecord | None, str, list[DefRecord]]:
        """A name no definition has, that a module binds to another (``attr.ib()``, where
        attr/__init__.py says ``ib = attr = attrib``): what that other name resolves to there."""
        if form.kind == "member" and not (form.receiver and form.receiver in self.imports_of(here)):
            return None, "not defined here", []
        said = nav.alias_of(self.name, form.receiver, here)
        if not said:
            return None, "not defined here", []
        path, other = said.split("\n")
        return Resolver(nav.conn, other, None, nav.imports_of, nav).judge(path, CallForm("bare"))

    def _super(
        self, nav: Navigator, own_class: str, methods: list[DefRecord], here: str
    ) -> tuple[DefRecord | None, str, list[DefRecord]]:
        """``super().f()``: f of the nearest base of the caller's class that has one."""
        above = next((found for b in nav.bases_of(own_class, here) if (found := nav.methods_of(b, methods, here))), [])
        if len(above) == 1:
            return above[0], "resolved", above
        found = above or methods
        best, _ = self._ranked(found, here, None)
        return best, f"one of {len(found)} candidates (a method of a base class)", found

    def _ranked(self, found: list[DefRecord], here: str, language: str | None) -> tuple[DefRecord | None, str]:
        """The likeliest of ``found`` for a use in ``here``: one pass over the candidates
        (``forward`` has thousands in a tree of models), no sort. ``language`` (a bare call's file):
        where it is one whose names must be defined or imported in a file to be used there, a
        lone candidate from elsewhere is not resolved."""
        if len(found) == 1:
            r = self.rank(found[0], here)
            if (
                language not in SCOPED
                or r in (0, 2)
                or (r == 1 and language == "go")
                or self._imports(here, place(found[0].path)[1])
            ):
                return found[0], "resolved"
            return found[0], f"one of 1 candidates ({RANKS[r]})"
        ranks = [self.rank(d, here) for d in found]
        top = min(ranks)
        tied = [d for r, d in zip(ranks, found, strict=True) if r == top]
        best = min(tied, key=lambda d: (place(d.path)[2], d.path, d.line))
        ties = len(tied)
        if top == 0 and ties == 1:
            return best, "resolved"  # defined in the same file
        if top == 2 and ties == 1:
            return best, "resolved"  # the one whose module the file imports
        if top == 2 and language == "python" and self.nav is not None:  # as the file's import names it
            meant = self.nav.through(self.name, self.nav.imported_from(self.name, here), tied)
            if len(meant) == 1:
                return meant[0], "resolved"
        if top == 1 and ties == 1 and language == "go":
            return best, "resolved"  # a Go package is its folder
        return best, f"one of {len(found)} candidates ({RANKS[top]})"


def _distinct(defs: list[DefRecord]) -> list[DefRecord]:
    """The definitions a name may mean, each once: of several with one scope in one file (Python's
    and TypeScript's overloads, a redefinition), the last; a stub's (.pyi, .d.ts, a header) only
    where no implementation of the same scope is among them."""
    last: dict[tuple[str, str], DefRecord] = {}
    for d in sorted(defs, key=lambda d: (d.path, d.start_line)):
        last[d.path, d.scope] = d
    kept = list(last.values())
    made = {d.scope for d in kept if classify(d.path, "") != DECLARATIONS}
    return [d for d in kept if classify(d.path, "") != DECLARATIONS or d.scope not in made]


# Languages where a name used bare must be defined in the file or imported into it (or, in Go, be of
# the package: the folder): a lone candidate from anywhere else is not it.
SCOPED = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "lua", "php"})


class Navigator(Types):
    """Answers over one index's symbol tables; ``glob`` and ``language`` keep the sites (and the
    definitions listed) of the paths they match."""

    def __init__(self, store: Store, root: Path, glob: str | None = None, language: str | None = None) -> None:
        super().__init__(store)
        self.root = root
        self.glob = glob
        self.language = language

    def _keep(self, path: str) -> bool:
        if self.glob and not path_matches(path, self.glob):
            return False
        if self.language:
            return self.language_of(path) == self.language
        return True

    def forms(self, sites: list[tuple[RefRecord, DefRecord | None]]) -> dict[tuple[str, int, str], CallForm]:
        """How each call site names what it calls (``calls.call_form``), read off its line (with
        the lines of the chain it goes on where it begins with ``.``: ``b.add_eq()`` then
        ``.add_order()``); a Go method's calls through its own receiver are its ``self`` calls."""
        out: dict[tuple[str, int, str], CallForm] = {}
        for r, around in sites:
            own = ""
            if around is not None and around.scope and self.language_of(r.path) == "go":
                own = go_receiver(self.text(around.path, around.line, around.line))[0]
            k = r.line
            while k > max(1, r.line - 8) and self.text(r.path, k, k).lstrip().startswith("."):
                k -= 1
            line = self.text(r.path, r.line, r.line)
            if k < r.line:
                line = "".join(row.strip() for row in self.text(r.path, k, r.line).split("\n"))
            out[r.path, r.line, r.name] = call_form(line, r.name, own)
        return out

    def with_text(self, sites: list[Site]) -> list[Site]:
        """``sites``, each with its line's text."""
        return [
            Site(s.path, s.line, s.name, s.kind, self.text(s.path, s.line, s.line), s.within, s.target, s.resolution)
            for s in sites
        ]

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
            raise UsageError("say what to follow: a name, or PATH:LINE")
        where = parse_target(text, self.root) if ("/" in text or ":" in text or "." in text) else None
        if where is not None:
            path, line = where
            defs = tables.file_definitions(self.conn, path)
            if not defs and not (self.root / path).is_file():
                raise NotHereError(f"{path}: no such file in {self.root}")
            if not defs:
                raise CodeSightError(
                    f"{path}: no definitions indexed there (a file of a language without a grammar, or not indexed)",
                    exit_code=1,
                )
            found = self._enclosing(path, line or defs[0].line, defs)
            if found is None:
                raise CodeSightError(f"{path}:{line}: no definition there", exit_code=1)
            return found.name, tables.definitions(self.conn, found.name), found
        defs = tables.definitions(self.conn, text)
        if not defs and "." in text.strip(".") and " " not in text:  # Scope.name
            scope, name = text.rsplit(".", 1)
            inner = [
                d for d in tables.definitions(self.conn, name) if d.scope == scope or d.scope.endswith("." + scope)
            ]
            if inner:
                return name, tables.definitions(self.conn, name), inner[0] if len(inner) == 1 else None
            return name, [], None
        return text, defs, defs[0] if len(defs) == 1 else None

    def definitions(self, target: str) -> Navigation:
        name, defs, chosen = self.target(target)
        ordered = sorted(defs, key=lambda d: (VALUE_ORDER[classify(d.path, "")], d.path, d.line))
        if chosen is not None:
            ordered = [chosen] + [d for d in ordered if d != chosen]
        return Navigation(
            "definitions",
            target,
            name,
            _symbol(chosen) if chosen else None,
            [_symbol(d) for d in ordered if self._keep(d.path)],
            pinned=chosen is not None,
        )

    def references(
        self, target: str, limit: int = MAX_SITES, kind: str | None = None, action: str = "references"
    ) -> Navigation:
        """Every use of the name; where the target names one definition (PATH:LINE, or a name with
        one), uses that resolve to another one are left out."""
        name, defs, chosen = self.target(target)
        nav = Navigation(
            action,
            target,
            name,
            _symbol(chosen) if chosen else None,
            [_symbol(d) for d in defs],
            pinned=chosen is not None and (len(defs) == 1 or target.strip() != name),
        )
        resolver = Resolver(self.conn, name, defs, self.imports_of, self)
        # A declaration (a .pyi stub, a .d.ts, a header) stands for its implementations: their uses are its
        declares = chosen is not None and classify(chosen.path, "") == DECLARATIONS
        sites: list[Site] = []
        found = tables.references_within(self.conn, name, kind)
        forms = self.forms([(r, around) for r, around in found if r.kind == "call"])
        # the chosen definition, and what stands for it (the last of its overloads in its file)
        same = (
            {chosen} | {d for d in _distinct(defs) if d.path == chosen.path and d.scope == chosen.scope}
            if chosen is not None
            else set()
        )
        for r, around in found:
            form = forms.get((r.path, r.line, r.name), UNKNOWN) if r.kind == "call" else UNKNOWN
            best, how, may_mean = resolver.judge(r.path, form, around, r.line)
            if form.kind != "unknown" and not declares and chosen is not None and not same & set(may_mean):
                continue  # a built-in, a method called bare, another class's method through self
            if (
                chosen is not None
                and best is not None
                and best not in same
                and how == "resolved"
                and not (declares and classify(best.path, "") != DECLARATIONS)
            ):
                continue  # it means another definition of the name
            if form.kind == "unknown":  # as the name alone says it
                if chosen is not None and how != "resolved" and best == chosen:
                    how = "resolved" if len(defs) == 1 else how
                how = how if len(defs) > 1 else ("resolved" if defs else "not defined here")
            sites.append(Site(r.path, r.line, name, r.kind, "", _symbol(around) if around else None, None, how))
        if action == "references":  # the definitions' own lines, so that "every place it is named" holds
            pinned = [chosen] if chosen is not None else defs
            sites += [Site(d.path, d.line, name, "definition", "", None, _symbol(d), "resolved") for d in pinned]
        sites = [s for s in sites if self._keep(s.path)]
        sites.sort(key=lambda s: (VALUE_ORDER[classify(s.path, "")], s.path, s.line))
        nav.truncated = len(sites) > limit
        nav.sites = self.with_text(sites[:limit])
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
        nav = Navigation(
            "callees",
            target,
            name,
            _symbol(chosen) if chosen else None,
            [_symbol(d) for d in defs],
            pinned=chosen is not None and (len(defs) == 1 or target.strip() != name),
        )
        if chosen is None:
            return nav
        inside = [
            d
            for d in tables.file_definitions(self.conn, chosen.path)
            if chosen.start_line <= d.start_line and d.end_line <= chosen.end_line
        ]
        lines = [d.line for d in inside] or [chosen.line]
        calls = tables.file_references(self.conn, chosen.path, within=lines, kind="call")
        by_line = {d.line: d for d in inside}
        sites: list[Site] = []
        seen: set[str] = set()
        resolvers: dict[str, Resolver] = {}
        firsts = []
        for r in calls:
            if r.name not in seen:  # each callee once, at its first call
                seen.add(r.name)
                firsts.append(r)
        forms = self.forms([(r, by_line.get(r.within)) for r in firsts])
        for r in firsts:
            resolver = resolvers.get(r.name) or resolvers.setdefault(
                r.name, Resolver(self.conn, r.name, None, self.imports_of, self)
            )
            best, how = resolver.verdict(
                chosen.path, forms.get((r.path, r.line, r.name), UNKNOWN), by_line.get(r.within), r.line
            )
            w = by_line.get(r.within)
            sites.append(
                Site(
                    r.path, r.line, r.name, "call", "", _symbol(w) if w else None, _symbol(best) if best else None, how
                )
            )
        sites = [s for s in sites if self._keep(s.target.path if s.target else s.path)]
        nav.truncated = len(sites) > limit
        nav.sites = self.with_text(sites[:limit])
        return nav

    def follow(self, action: str, target: str, limit: int = MAX_SITES) -> Navigation:
        if action not in ACTIONS:
            raise UsageError(f"{action}: not one of {', '.join(ACTIONS)}")
        if action == "definitions":
            return self.definitions(target)
        if action == "callees":
            return self.callees(target, limit)
        if action == "callers":
            return self.callers(target, limit)
        return self.references(target, limit)
