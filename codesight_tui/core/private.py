"""What codesight writes is its owner's alone: every directory it owns is 0700 and every file 0600,
whatever the umask (an index of private code on a shared machine is private code).

The process umask is never changed: the TUI starts editors and viewers, whose files must keep the
user's own umask. Instead directories are made 0700 as they are created, database files are
created 0600 before SQLite opens them, and ``tighten`` walks what an older codesight or a
library (LanceDB writes with the umask) left wider. Inside a 0700 directory nobody else can reach
a file anyway, so a file that is wider for the moment between its creation and the next
``tighten`` is never exposed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path`` as a directory that only its owner can enter: created 0700 with every parent this
    call creates, or narrowed to 0700 where it exists and is ours. Raises ``OSError``."""
    path = Path(path).expanduser()
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=DIR_MODE)
        _narrow(d, DIR_MODE)
    _narrow(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if it does not exist (so that SQLite, which keeps a
    database's mode for its -wal and -shm files, never makes it wider); narrow it if it does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
        os.close(fd)
    except FileExistsError:
        _narrow(Path(path), FILE_MODE)
    return Path(path)


def _narrow(path: Path, mode: int) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
        return  # never chmod through a link, nor what another user owns
    if stat.S_IMODE(st.st_mode) & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 & 0o7777 | (mode & 0o700))


def tighten(root: Path) -> int:
    """Narrow every directory under ``root`` (itself included) to 0700 and every file to 0600
    where group or others have any access; returns how many were changed. Links are not
    followed. Cheap: one ``lstat`` per entry, a ``chmod`` only where one is needed."""
    root = Path(root)
    changed = 0
    if not root.exists():
        return 0
    stack = [root]
    while stack:
        d = stack.pop()
        changed += _narrow_counted(d, DIR_MODE)
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_symlink():
                            continue
                        if e.is_dir(follow_symlinks=False):
                            stack.append(Path(e.path))
                        else:
                            changed += _narrow_counted(Path(e.path), FILE_MODE)
                    except OSError:
                        continue
        except OSError:
            continue
    return changed


def _narrow_counted(path: Path, mode: int) -> int:
    try:
        before = stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return 0
    if not before & 0o077:
        return 0
    _narrow(path, mode)
    return 1
