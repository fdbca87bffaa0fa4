""" "More like this": the chunk a target names (``path:line``, a path, or a symbol), and what a
search for code like it is made of.

The search itself is the ordinary one (``core.search.searcher.search`` under the same ranking stack):
BM25 takes the chunk's own names as its words, and the vector lists take the chunk's code (its
stored vectors where it has them). The source and what overlaps it are left out of the answer.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codesight_tui.core.errors import NotHereError, UsageError
from codesight_tui.core.text import STOPWORDS, split_identifier

if TYPE_CHECKING:
    from codesight_tui.core.store.store import Store

MAX_TERMS = 32  # BM25 words taken from the chunk: its most frequent names' parts
_TARGET = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::\d+)?$")  # path:line, or vimgrep's path:line:col
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
# Words of nearly every language's syntax: in a chunk's names they only crowd out its own words.
KEYWORDS = frozenset(
    [
        "def",
        "fn",
        "func",
        "function",
        "return",
        "import",
        "from",
        "class",
        "struct",
        "enum",
        "impl",
        "interface",
        "trait",
        "public",
        "private",
        "protected",
        "static",
        "const",
        "let",
        "var",
        "val",
        "mut",
        "self",
        "this",
        "super",
        "new",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "void",
        "int",
        "str",
        "string",
        "bool",
        "boolean",
        "char",
        "float",
        "double",
        "long",
        "async",
        "await",
        "yield",
        "pub",
        "use",
        "mod",
        "package",
        "module",
        "export",
        "default",
        "extends",
        "implements",
        "throws",
        "throw",
        "try",
        "catch",
        "except",
        "finally",
        "raise",
        "else",
        "elif",
        "end",
        "begin",
        "lambda",
        "match",
        "case",
        "switch",
        "break",
        "continue",
        "goto",
        "typedef",
        "sizeof",
        "unsigned",
        "signed",
        "auto",
        "type",
    ]
)


@dataclass(frozen=True)
class RelatedSource:
    """The chunk a "more like this" search starts from."""

    root: str  # its repository
    path: str  # relative to its repository, POSIX
    start_line: int
    end_line: int
    chunk_id: int
    content: str
    terms: str  # the BM25 query: the chunk's names, split into words

    @property
    def label(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"

    def overlaps(self, root: str, path: str, start: int, end: int) -> bool:
        return root == self.root and path == self.path and start <= self.end_line and end >= self.start_line


def terms_of(content: str, limit: int = MAX_TERMS) -> str:
    """The words of a chunk's names, most frequent first: ``parseConfigFile(path)`` gives
    ``parse config file path``. Stopwords, common keywords and one-letter words are left out."""
    counts: Counter[str] = Counter()
    for name in _NAME.findall(content):
        for part in split_identifier(name) or [name.lower()]:
            if len(part) > 1 and part not in STOPWORDS and part not in KEYWORDS and not part.isdigit():
                counts[part] += 1
    return " ".join(w for w, _ in counts.most_common(limit))


MAX_LINE = 2**31 - 1  # past the end of any file; SQLite's integers and int() both take it


def _line_number(digits: str) -> int:
    """A line number as typed; one too long for any file (or for int(), past 4,300 digits) is
    MAX_LINE, which no file has."""
    return int(digits) if len(digits) <= 9 else MAX_LINE


def from_cwd(target: str, cwd: str | Path) -> str:
    """``target`` with a relative path that names a file under ``cwd`` made absolute: ``mod5.py:10``
    typed in ``repo/src`` (as ``search --vimgrep`` there prints it) is ``repo/src/mod5.py:10``. A
    path that is no file there is left as it is: relative to the repository root, or a symbol."""
    text = target.strip()
    m = _TARGET.match(text)
    path, rest = (m.group("path"), text[len(m.group("path")) :]) if m else (text, "")
    p = Path(path).expanduser()
    if p.is_absolute():
        return text
    try:
        full = Path(cwd) / p
        return f"{full}{rest}" if full.is_file() else text
    except (OSError, ValueError):
        return text


def parse_location(target: str) -> tuple[str, int | None] | None:
    """``(path, line)`` where ``target`` reads as ``path:line`` (``path:line:col`` too), ``(path,
    None)`` for a path with a ``/`` and no space, else None (a symbol: ``utils.slugify`` is one).
    The path is taken as written: for a store with no working tree (a fleet)."""
    text = target.strip()
    m = _TARGET.match(text)
    if m:
        return m.group("path").removeprefix("./"), _line_number(m.group("line"))
    if "/" in text and " " not in text:
        return text.removeprefix("./"), None
    return None


def parse_target(target: str, root: Path) -> tuple[str, int | None] | None:
    """``(path relative to root, line or None)`` where ``target`` names a file under ``root``
    (``src/app.py:42``, ``src/app.py``, an absolute path), else None (a symbol, perhaps).
    Raises for a path outside ``root``."""
    text = target.strip()
    m = _TARGET.match(text)
    path, line = (m.group("path"), _line_number(m.group("line"))) if m else (text, None)
    p = Path(path).expanduser()
    full = p if p.is_absolute() else root / p
    # Outside the repository is said before anything is looked at there: whether such a path
    # exists is none of the answer's business (an existence oracle otherwise).
    if not (_within(Path(os.path.normpath(full)), root) or _within(full.resolve(), root)):
        raise NotHereError(f"{path} is not inside {root}")
    if not (m or full.is_file()):
        return None
    try:
        rel = full.resolve().relative_to(root)
    except ValueError:  # a link inside that leads out: the same answer
        raise NotHereError(f"{path} is not inside {root}") from None
    return rel.as_posix(), line


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _file_source(store: Store, root: Path, path: str) -> RelatedSource | None:
    """A whole file as its definitions say it: their names and words are the BM25 query, the
    largest one's vectors the vector query, and the whole file is left out of the answer. Its
    first chunk alone is usually its imports, and matched other files' import blocks. None for a
    file with no definition (its first chunk then stands for it)."""
    rows = store.conn.execute(
        "SELECT id, scope, start_line, end_line FROM chunks WHERE path = ? ORDER BY start_line", (path,)
    ).fetchall()
    defs = [r for r in rows if r[1]]
    if not defs:
        return None
    chunks = store.get_chunks([r[0] for r in defs])
    largest = max(defs, key=lambda r: (r[3] - r[2], -r[2]))
    names = " ".join(r[1] for r in defs)
    text = names + "\n" + "\n".join(chunks[r[0]].content for r in defs if r[0] in chunks)
    best = chunks[largest[0]]
    return RelatedSource(
        str(root), path, 1, max(r[3] for r in rows), best.id, best.content, terms_of(text) or names[:200]
    )


def find_source(store: Store, root: Path, target: str, definitions: Callable[[Store, str], list[int]]) -> RelatedSource:
    """The chunk ``target`` names in this index: the smallest chunk holding ``path:line`` (a path
    alone: its first chunk), or the definition of a symbol (``definitions(store, name)``)."""
    where = parse_target(target, root)
    row = None
    if where is not None and where[1] is None and (whole := _file_source(store, root, where[0])) is not None:
        return whole
    if where is not None:
        path, line = where
        found = store.conn.execute(
            "SELECT id FROM chunks WHERE path = ? AND start_line <= ? AND end_line >= ?"
            " ORDER BY end_line - start_line, start_line LIMIT 1",
            (path, line or 1, line or 1),
        ).fetchone()
        if found is None and line is None:
            found = store.conn.execute(
                "SELECT id FROM chunks WHERE path = ? ORDER BY start_line LIMIT 1", (path,)
            ).fetchone()
        if found is None:
            known = store.conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone()
            if known is None:
                if not (root / path).is_file():
                    raise NotHereError(f"{path}: no such file in {root}")
                raise NotHereError(f"{path} is not indexed (ignored, skipped, or new: run `codesight index`)")
            shown = line if line != MAX_LINE else "that far"
            raise UsageError(f"{path} has no line {shown}")
        row = store.get_chunks([found[0]])[found[0]]
    else:
        name = target.strip()
        if not name or not _NAME.fullmatch(name.split(".")[-1] or "-"):
            raise UsageError(f"{target!r} is neither PATH:LINE, a file, nor a symbol")
        ids = definitions(store, name)
        if not ids:
            raise NotHereError(f"no file or definition named {name!r} here: give PATH:LINE")
        row = store.get_chunks(ids[:1])[ids[0]]
    return RelatedSource(
        str(root),
        row.path,
        row.start_line,
        row.end_line,
        row.id,
        row.content,
        terms_of(row.content) or row.content[:200],
    )
