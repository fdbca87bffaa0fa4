"""The keys in force: every binding's id, the ``[keymap]`` table of the config (``Settings.keymap``)
that remaps them, as posting does, and what a remap that names no binding or takes another
binding's key tells the user."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual.binding import Binding

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def bindings_of(*classes: type) -> list[Binding]:
    """The ``Binding``s (those with an id: the remappable ones) that ``classes`` declare."""
    return [b for cls in classes for b in getattr(cls, "BINDINGS", ()) if isinstance(b, Binding) and b.id]


def in_force(bindings: Iterable[Binding], keymap: Mapping[str, str]) -> list[Binding]:
    """``bindings`` with the keys the keymap gives them: what the help screen lists."""
    return [replace(b, key=keymap[b.id], key_display=None) if b.id and b.id in keymap else b for b in bindings]


def _keys(keys: str) -> list[str]:
    return [k.strip().lower() for k in keys.split(",") if k.strip()]


def keymap_problems(keymap: Mapping[str, str], bindings: Iterable[Binding]) -> list[str]:
    """One line per remap that cannot do what it says: an id no binding has, no key at all, or a
    key another binding of the same place (``app``, ``query``, a screen: the id's first word) has.
    Textual gives such a key to the remap, and the other binding keeps only its other keys."""
    known = {b.id: b for b in bindings if b.id}
    problems = [f"keymap: no key binding is called {name!r} (F1 lists the ids)" for name in keymap if name not in known]
    problems += [
        f"keymap: {name} is given no key" for name, keys in keymap.items() if name in known and not _keys(keys)
    ]
    owner = {
        (name.split(".", 1)[0], key): name for name, b in known.items() if name not in keymap for key in _keys(b.key)
    }
    for name, keys in keymap.items():
        if name not in known:
            continue
        for key in _keys(keys):
            other = owner.setdefault((name.split(".", 1)[0], key), name)
            if other != name:
                problems.append(f"keymap: {key} is {other}'s key too; {name} takes it")
    return problems
