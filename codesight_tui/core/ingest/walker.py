"""A .gitignore-aware walk of a repository that never leaves its root and never reads ignored files."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import pathspec

from codesight_tui.core.languages import is_binary_name, is_document
from codesight_tui.core.redact import SECRET_FILES, secret_name
from codesight_tui.core.text import LONE_SURROGATE

readfiles: ModuleType | None
try:  # a batch of files read in C (native/readfiles.c); optional, as a build without a compiler has none
    from codesight_tui.core.ingest import readfiles as _built

    readfiles = _built
except ImportError:  # pragma: no cover - read_bytes reads the same bytes, a file at a time
    readfiles = None

_UTF8_MARK = b"\xef\xbb\xbf"
_MARK_STARTS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16's byte-order marks

IGNORE_FILES = (".gitignore", ".codesightignore")
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
SNIFF_BYTES = 8192
MAX_DOCUMENT_SIZE = 50_000_000  # PDF, DOCX and PPTX files (the setting max_document_size)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One candidate file: path relative to the root (POSIX separators) plus its stat."""

    rel_path: str
    abs_path: str
    size: int
    mtime_ns: int
    ino: int = 0

    @property
    def seen(self) -> Seen:
        """What the walk saw: a read that finds anything else here (swapped or written since) skips it."""
        return (self.ino, self.size, self.mtime_ns)


# SQLite keeps 64-bit integers: a modification time past 2262-04-11 (or before 1677) in
# nanoseconds does not fit, and one such file must not stop the whole run.
_MTIME_MAX = 2**63 - 1


def clamp_mtime(mtime_ns: int) -> int:
    """A modification time that fits in SQLite's 64-bit integer."""
    return max(-_MTIME_MAX, min(_MTIME_MAX, mtime_ns))


@dataclass
class WalkStats:
    """What the walk passed over, by reason (``too_large``, ``binary``, ``unreadable``, ...)."""

    skipped: Counter[str] = field(default_factory=Counter)
    symlink_dirs: int = 0  # symlinks to directories seen (file watchers would follow them)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n


_WILDCARD_RUN = re.compile(r"[*?]{2,}")


def _tame(line: str) -> str:
    """The same pattern without the shapes that make a regex backtrack for minutes: a run of
    wildcards (``*?*?*?``, 150 of them hung the walk on a 255-byte name) is "at least k
    characters", ``?`` k times then ``*``; repeated ``**/`` segments are one."""
    if "[" in line or "\\" in line:
        return line
    parts: list[str] = []
    for seg in line.split("/"):
        if seg != "**":
            seg = _WILDCARD_RUN.sub(lambda m: "?" * m.group().count("?") + ("*" if "*" in m.group() else ""), seg)
        elif parts and parts[-1] == "**":
            continue
        parts.append(seg)
    return "/".join(parts)


def spec_from_lines(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """A gitignore spec that skips the patterns git would ignore as invalid (``!``, ``[``): one
    bad line in a .gitignore must not stop the whole walk. Pathological wildcard runs are
    rewritten to equivalent patterns that match in linear time (``_tame``)."""
    lines = [_tame(line) for line in lines]
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # GitIgnorePatternError, or a regex that cannot compile  # noqa: BLE001
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except Exception:  # noqa: BLE001 - a pattern pathspec can't compile is dropped, the rest kept
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good)


def _read_spec(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return spec_from_lines(lines) if any(line.strip() for line in lines) else None


def global_excludes_file(root: Path) -> Path | None:
    """The user's global ignore file as git finds it: ``core.excludesFile`` (from git itself,
    so every config file git reads counts), else ``$XDG_CONFIG_HOME/git/ignore`` or
    ``~/.config/git/ignore``. Asked of git once per repository and configuration (a watcher
    builds its rules again on every ignore-file change); the file itself is read every time."""
    env = tuple(os.environ.get(k, "") for k in ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"))
    xdg = Path(env[1]) if env[1] else Path.home() / ".config"
    configs = (Path(env[2]) if env[2] else Path.home() / ".gitconfig", xdg / "git" / "config", root / ".git" / "config")
    return _excludes_file(str(root), env, *(_mtime(p) for p in configs))


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


@lru_cache(maxsize=64)
def _excludes_file(root_str: str, env: tuple[str | None, ...], *config_mtimes: int) -> Path | None:
    root = Path(root_str)
    try:
        out = subprocess.run(
            ["git", "config", "--path", "--get", "core.excludesFile"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        value = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):  # no git: its default place still counts
        value = ""
    if value:
        path = Path(value).expanduser()
        return path if path.is_absolute() else root / path
    xdg = os.environ.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "git" / "ignore"


class IgnoreRules:
    """Git's precedence: the deepest ignore file with a matching pattern decides, then
    ``.git/info/exclude``, then the user's global ignore file (``core.excludesFile``); ``--exclude``
    patterns always win. Files named like secrets (``secret_files``) are never walked."""

    def __init__(
        self, root: Path, exclude: list[str] | None = None, secret_files: tuple[str, ...] | list[str] = SECRET_FILES
    ) -> None:
        self.root = root
        self.exclude = spec_from_lines(exclude) if exclude else None
        self.secret_files = tuple(secret_files)
        base: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        excludes_file = global_excludes_file(root)
        for path in (excludes_file, root / ".git" / "info" / "exclude"):
            spec = _read_spec(path) if path is not None else None
            if spec:
                base.append(("", spec))
        self.base = base

    def secret(self, rel_path: str, is_dir: bool) -> bool:
        """Whether the path is named like a secret (never read, counted as ``secret``)."""
        return secret_name(rel_path, self.secret_files, is_dir)

    def dir_specs(self, dir_abs: Path, rel_dir: str) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
        """The ignore specs that a directory itself contributes."""
        specs = []
        for name in IGNORE_FILES:
            spec = _read_spec(dir_abs / name)
            if spec:
                specs.append((rel_dir, spec))
        return specs

    def ignored(self, rel_path: str, is_dir: bool, stack: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
        """Whether ``rel_path`` is ignored under the stack of (directory, spec) pairs."""
        probe = rel_path + "/" if is_dir else rel_path
        if self.exclude is not None and self.exclude.match_file(probe):
            return True
        for prefix, spec in reversed(stack):
            local = probe[len(prefix) + 1 :] if prefix else probe
            include = spec.check_file(local).include
            if include is not None:
                return include
        return False


class IgnoreMatcher:
    """Whether the walk would skip a path by the ignore rules, for many paths of one tree: each
    directory's ignore files are read once.
    ``forget()`` drops what was read (an ignore file changed)."""

    def __init__(
        self, root: Path, exclude: list[str] | None = None, secret_files: tuple[str, ...] | list[str] = SECRET_FILES
    ) -> None:
        self.root = Path(root)
        self.exclude = exclude
        self.secret_files = tuple(secret_files)
        self.rules = IgnoreRules(self.root, exclude, self.secret_files)
        self._specs: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {}

    def forget(self) -> None:
        self.rules = IgnoreRules(self.root, self.exclude, self.secret_files)
        self._specs.clear()

    def _dir_specs(self, rel_dir: str) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
        specs = self._specs.get(rel_dir)
        if specs is None:
            specs = self._specs[rel_dir] = self.rules.dir_specs(self.root / rel_dir if rel_dir else self.root, rel_dir)
        return specs

    def __call__(self, rel_path: str) -> bool:
        """Whether the walk would skip ``rel_path`` (a file, existing or not) by the ignore rules:
        any ignored parent directory, VCS directories, ``--exclude`` and every level's ignore files."""
        parts = rel_path.split("/")
        if any(p in ALWAYS_SKIPPED_DIRS for p in parts[:-1]):
            return True
        stack = list(self.rules.base)
        rel_dir = ""
        for i, part in enumerate(parts):
            stack += self._dir_specs(rel_dir)
            rel = f"{rel_dir}/{part}" if rel_dir else part
            is_dir = i < len(parts) - 1
            if self.rules.ignored(rel, is_dir, stack) or self.rules.secret(rel, is_dir):
                return True
            rel_dir = rel
        return False


def entry_for(
    root: Path,
    rel_path: str,
    *,
    max_file_size: int = 1_000_000,
    stats: WalkStats | None = None,
    ignored: IgnoreMatcher | None = None,
    max_document_size: int = MAX_DOCUMENT_SIZE,
) -> FileEntry | None:
    """The ``FileEntry`` the walk would yield for ``rel_path``, or None where the walk would
    yield none (gone, ignored, reached through a symlink, special, binary by name, too large):
    the same rules as ``walk`` for one file, without walking the tree."""
    root = Path(root)
    if LONE_SURROGATE.search(rel_path):
        return None
    ignored = ignored or IgnoreMatcher(root)
    if ignored(rel_path):
        return None
    parts = rel_path.split("/")
    path = root
    for part in parts:  # the walk never follows a symlink, so no path through one is indexed
        path = path / part
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if is_binary_name(rel_path):
        if stats is not None:
            stats.skip("binary")
        return None
    if st.st_size > (max_document_size if is_document(rel_path) else max_file_size):
        if stats is not None:
            stats.skip("too_large")
        return None
    return FileEntry(rel_path, str(path), st.st_size, clamp_mtime(st.st_mtime_ns), st.st_ino)


# A directory the walk is in: its relative path, the ignore specs in force, its sorted entries
# still to visit, reversed so that pop() takes them in name order.
Frame = tuple[str, list[tuple[str, pathspec.GitIgnoreSpec]], list[os.DirEntry[str]]]


def _frame(
    dir_abs: Path,
    rel_dir: str,
    parent_stack: list[tuple[str, pathspec.GitIgnoreSpec]],
    rules: IgnoreRules,
    stats: WalkStats,
) -> Frame | None:
    """The frame of a directory the walk enters; None (counted) where it cannot be read."""
    stack = parent_stack + rules.dir_specs(dir_abs, rel_dir)
    try:
        with os.scandir(dir_abs) as it:
            entries = sorted(it, key=lambda e: e.name, reverse=True)
    except OSError:
        stats.skip("unreadable")
        return None
    return rel_dir, stack, entries


def _kinds(entry: os.DirEntry[str], stats: WalkStats) -> tuple[bool, bool, bool] | None:
    """``(is_link, is_dir, is_file)`` of a directory entry (a link's target's kind), or None where
    it cannot be told (a link in a loop, a name that vanished), counted in ``stats``."""
    try:
        return entry.is_symlink(), entry.is_dir(), entry.is_file()
    except OSError:
        try:
            stats.skip("broken_symlink" if entry.is_symlink() else "unreadable")
        except OSError:
            stats.skip("unreadable")
        return None


def _file_entry(
    entry: os.DirEntry[str], rel: str, stats: WalkStats, max_file_size: int, max_document_size: int
) -> FileEntry | None:
    """The ``FileEntry`` of a regular file the walk keeps; None (counted) where it is binary by its
    name, unreadable or too large."""
    if is_binary_name(rel):
        stats.skip("binary")
        return None
    try:
        st = entry.stat()
    except OSError:
        stats.skip("unreadable")
        return None
    if st.st_size > (max_document_size if is_document(rel) else max_file_size):
        stats.skip("too_large")
        return None
    return FileEntry(rel, entry.path, st.st_size, clamp_mtime(st.st_mtime_ns), st.st_ino)


def walk(  # noqa: C901 - one pass over the tree; each branch is one rule for one kind of entry
    root: str | Path,
    *,
    max_file_size: int = 1_000_000,
    exclude: list[str] | None = None,
    stats: WalkStats | None = None,
    max_document_size: int = MAX_DOCUMENT_SIZE,
    secret_files: tuple[str, ...] | list[str] = SECRET_FILES,
) -> Iterator[FileEntry]:
    """Yield every indexable ``FileEntry`` under ``root``, sorted per directory, depth first.

    Skips ignored paths, VCS directories, files named like secrets (``secret_files``, counted as
    ``secret``), files over ``max_file_size`` bytes (documents: over ``max_document_size``) and
    well-known binary extensions. Symlinks are not followed: one that leads out of the root is
    counted as skipped, and one inside it points at a file the walk reaches under its real path
    anyway (so each file is indexed once, and a symlink loop costs nothing).
    Unreadable directories and files are counted in ``stats`` and never raise. The walk keeps
    its own stack, so a tree thousands of levels deep costs memory, not Python's recursion limit.
    """
    root_path = Path(root).resolve()
    stats = stats if stats is not None else WalkStats()
    rules = IgnoreRules(root_path, exclude, secret_files)
    root_real = os.path.realpath(root_path)
    visited: set[str] = {root_real}

    def inside(real: str) -> bool:
        return real == root_real or real.startswith(root_real + os.sep)

    first = _frame(root_path, "", list(rules.base), rules, stats)
    frames = [first] if first is not None else []
    while frames:
        rel_dir, stack, entries = frames[-1]
        if not entries:
            frames.pop()
            continue
        entry = entries.pop()
        if LONE_SURROGATE.search(entry.name):
            # A name that is not valid UTF-8 can't be stored, tokenised or shown as it is.
            stats.skip("non_utf8_name")
            continue
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        kinds = _kinds(entry, stats)
        if kinds is None:
            continue
        is_link, is_dir, is_file = kinds
        if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
            continue
        if is_link and (is_dir or not is_file):
            stats.symlink_dirs += 1
        if rules.ignored(rel, is_dir, stack):
            continue
        if rules.secret(rel, is_dir and not is_link):
            stats.skip("secret")
            continue
        if is_link:
            # A link to something inside the root is never followed (as git and ripgrep do):
            # its target is walked under its real path, which is the path people use.
            if not inside(os.path.realpath(entry.path)):
                stats.skip("symlink_outside_root")
            elif not (is_dir or is_file):
                stats.skip("broken_symlink")
            continue
        if not (is_dir or is_file):  # FIFO, socket, device: never opened
            stats.skip("special_file")
            continue
        if is_dir:
            real = os.path.realpath(entry.path)
            if real in visited:  # a bind mount seen twice
                continue
            visited.add(real)
            child = _frame(Path(entry.path), rel, stack, rules, stats)
            if child is not None:
                frames.append(child)
        elif (found := _file_entry(entry, rel, stats, max_file_size, max_document_size)) is not None:
            yield found


# What the walk saw of a file: (inode, size, mtime_ns).
Seen = tuple[int, int, int]


def open_checked(abs_path: str, expect: Seen | None = None) -> tuple[int | None, str | None]:
    """``_open_stat`` without the file's status."""
    fd, _st, why = _open_stat(abs_path, expect)
    return fd, why


def _open_stat(abs_path: str, expect: Seen | None = None) -> tuple[int | None, os.stat_result | None, str | None]:
    """A file descriptor of ``abs_path`` opened for reading without following a symlink in its
    last part, and only where it is still a regular file that matches what the walk saw
    (``expect``: inode, size and modification time): ``(fd, status, None)`` or ``(None, None,
    reason)``. A file swapped for a link (``symlink``), a FIFO (``special_file``) or another file,
    or written to since (``changed``), is not read: the next run reads what is there then."""
    try:
        fd = os.open(abs_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        import errno

        return None, None, "symlink" if exc.errno in (errno.ELOOP, errno.EMLINK) else "unreadable"
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None, None, "unreadable"
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None, None, "special_file"
    if expect is not None and (st.st_ino, st.st_size, clamp_mtime(st.st_mtime_ns)) != expect:
        os.close(fd)
        return None, None, "changed"
    return fd, st, None


def read_bytes(
    abs_path: str, max_bytes: int | None = None, expect: Seen | None = None
) -> tuple[bytes | None, str | None]:
    """A file's bytes, read through ``open_checked``, never more than ``max_bytes`` (a file that
    grows past it while it is read is ``too_large``, and costs no more than that much memory)."""
    fd, st, why = _open_stat(abs_path, expect)
    if fd is None or st is None:
        return None, why
    try:  # os.read, no file object: exact search reads thousands of files per query
        parts: list[bytes] = []
        got, want = 0, (max_bytes + 1) if max_bytes is not None else None
        # The first read asks for the size the file has, and one byte more to see its end: os.read
        # allocates what it is asked for, and a megabyte asked of a 4 KB file halved grep's speed.
        size = st.st_size + 1
        while want is None or got < want:
            asked = min(want - got, size) if want is not None else size
            size = 1 << 20
            part = os.read(fd, asked)
            parts.append(part)
            got += len(part)
            if len(part) < asked:  # a regular file's short read is its end: no second call to see it
                break
        data = parts[0] if len(parts) == 1 else b"".join(parts)
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:
        return None, "too_large"
    return data, None


def read_many(paths: Sequence[str], max_bytes: int, text: bool = False) -> list[bytes | str]:
    """Each file's bytes, or why it was not read (``read_bytes``'s reasons; with ``text``, a file
    with a NUL byte and no byte-order mark is ``binary``): in C where it is built, a batch read
    with the interpreter's lock let go once (``native/readfiles.c``), else one file at a time."""
    read = readfiles.read(paths, max_bytes, text) if readfiles is not None else [None] * len(paths)
    out: list[bytes | str] = []
    for path, data in zip(paths, read, strict=True):
        if data is None:  # not built, or the file grew while it was read: the careful way
            data, why = read_bytes(path, max_bytes)
            if data is None:
                data = why or "unreadable"
            elif text and data[:2] not in _MARK_STARTS and data[:3] != _UTF8_MARK and b"\x00" in data:
                data = "binary"
        out.append(data)
    return out


def read_text(abs_path: str, max_bytes: int | None = None, expect: Seen | None = None) -> tuple[str | None, str | None]:
    """Read a file as text. Returns ``(text, None)`` or ``(None, reason)`` for binary/unreadable
    (and, through ``read_bytes``, a link or another file swapped in, or a file grown too large).

    Invalid UTF-8 is decoded with replacement characters rather than skipped; CRLF becomes LF.
    """
    data, why = read_bytes(abs_path, max_bytes, expect)
    if data is None:
        return None, why
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with its byte-order mark (Windows editors)
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return None, "binary"
        data = text.encode("utf-8")
    if b"\x00" in data:  # anywhere, not just the first 8 KB: the whole file is read anyway
        return None, "binary"
    text = data.decode("utf-8", errors="replace")
    head = text[:SNIFF_BYTES]
    if head.count("\ufffd") > len(head) * 0.3:  # mostly bytes that are not text (no NUL among them)
        return None, "binary"
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, None
