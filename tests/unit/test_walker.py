import os
from pathlib import Path
from typing import Any

import pytest

from codesight_tui.core.ingest.walker import WalkStats, read_text, walk


def paths(root: Path, **kw: Any) -> tuple[set[str], WalkStats]:
    stats = WalkStats()
    return {e.rel_path for e in walk(root, stats=stats, **kw)}, stats


def test_walk_honours_gitignore_at_every_level(repo: Path) -> None:
    found, _ = paths(repo)
    assert "src/geo.py" in found and "web/client.js" in found and "server/main.go" in found
    assert "debug.log" not in found and "build/out.py" not in found and "secret.txt" not in found
    assert "src/generated_skip.py" not in found  # nested .gitignore
    assert "src/generated_keep.py" in found  # negation in the nested .gitignore
    assert not any(p.startswith(".git/") for p in found)


def test_walk_skips_big_files_and_survives_symlink_loop(repo: Path) -> None:
    found, stats = paths(repo, max_file_size=1_000_000)
    assert "big.txt" not in found
    assert stats.skipped["too_large"] == 1
    # The loop src/loop -> .. is visited at most once: no path goes through it.
    assert not any("/loop/" in p for p in found)


def test_info_exclude_codesightignore_and_exclude_globs(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(parents=True)
    (repo / ".git" / "info" / "exclude").write_text("notes/\n")
    (repo / ".codesightignore").write_text("server/\n")
    found, _ = paths(repo, exclude=["*.md"])
    assert not any(p.startswith("notes/") for p in found)
    assert not any(p.startswith("server/") for p in found)
    assert "README.md" not in found
    assert "src/geo.py" in found


def test_symlink_out_of_root_is_not_followed(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("LEAK = 1\n")
    os.symlink(outside, repo / "escape")
    os.symlink(outside / "leak.py", repo / "leak_link.py")
    found, stats = paths(repo)
    assert not any("leak" in p for p in found)
    assert stats.skipped["symlink_outside_root"] == 2


def test_each_file_once_under_its_real_path(tmp_path: Path) -> None:
    # As git and ripgrep do: a link to something inside the root is not followed, so a file is
    # indexed once, under the path people (and annotations) use, even where the link sorts first.
    root = tmp_path / "r"
    (root / "pkg_core" / "src").mkdir(parents=True)
    (root / "pkg_core" / "src" / "engine.py").write_text("def run():\n    return 1\n")
    (root / "a_pkg" / "src").mkdir(parents=True)
    os.symlink("../../pkg_core/src", root / "a_pkg" / "src" / "core")  # 'a_pkg' walks before 'pkg_core'
    os.symlink("pkg_core/src/engine.py", root / "engine_link.py")
    found, _ = paths(root)
    assert found == {"pkg_core/src/engine.py"}


def test_unreadable_files_are_counted_not_fatal(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def guarded(path: Any, *a: Any, **kw: Any) -> int:
        if str(path).endswith("auth.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", guarded)
    text, why = read_text(str(repo / "src" / "auth.py"))
    assert text is None and why == "unreadable"
    assert read_text(str(repo / "src" / "geo.py"))[0] is not None


def test_unreadable_directory_is_counted(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_scandir = os.scandir

    def flaky(path: Any) -> Any:
        if str(path).endswith("server"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", flaky)
    found, stats = paths(repo)
    assert stats.skipped["unreadable"] == 1
    assert "src/geo.py" in found


def test_read_text_binary_invalid_utf8_and_crlf(repo: Path) -> None:
    assert read_text(str(repo / "assets" / "blob.dat2")) == (None, "binary")
    text, why = read_text(str(repo / "latin1.py"))
    assert why is None and text is not None and "caf\ufffd" in text
    text, _ = read_text(str(repo / "notes" / "crlf.txt"))
    assert text == "first line\nsecond line\nthird line\n"


def test_invalid_gitignore_patterns_are_skipped_not_fatal(tmp_path: Path) -> None:
    # Found by benchmarks/torture.py: a .gitignore holding `!` stopped the whole walk with a
    # GitIgnorePatternError traceback. Git ignores such lines; so do we, and the rest still apply.
    (tmp_path / ".gitignore").write_text("!\n[\n\\\n*.log\n[z-a]\nx" + "*?" * 150 + "y\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "debug.log").write_text("noise\n")
    found, _ = paths(tmp_path)
    assert found == {"a.py", ".gitignore"} or found == {"a.py"}
    found, _ = paths(tmp_path, exclude=["!", "*.py"])
    assert "a.py" not in found


def test_pathological_gitignore_patterns_match_in_linear_time(tmp_path: Path) -> None:
    # Found by benchmarks/torture.py: `x*?*?…y` (150 wildcards) against a 255-byte name that
    # starts with x backtracked for minutes, and the walk hung.
    import time

    (tmp_path / ".gitignore").write_text("x" + "*?" * 150 + "y\n**/**/**/**/*.log\n")
    (tmp_path / ("x" * 251 + ".js")).write_text("x = 1\n")
    (tmp_path / ("x" * 200 + "zy")).write_text("ignored\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.log").write_text("ignored\n")
    t0 = time.monotonic()
    found, _ = paths(tmp_path)
    assert time.monotonic() - t0 < 5
    assert "x" * 251 + ".js" in found and "x" * 200 + "zy" not in found and "a/b.log" not in found


def test_binary_without_a_nul_in_its_first_8_kb_is_skipped(tmp_path: Path) -> None:
    # Issue 22, fault 14: a binary file with no NUL byte in its first 8 KB got indexed.
    from codesight_tui.core.ingest.walker import read_text

    late = tmp_path / "late.py"
    late.write_bytes(b"# text\n" * 1300 + b"\x00\x01binary after 8 KB\n")
    noisy = tmp_path / "noisy.py"
    noisy.write_bytes(bytes(range(128, 256)) * 200)
    latin = tmp_path / "latin1.py"
    latin.write_bytes("caf\xe9 = 'cr\xe8me br\xfbl\xe9e'\n".encode("latin-1") * 50)
    assert read_text(str(late)) == (None, "binary")
    assert read_text(str(noisy)) == (None, "binary")
    text, why = read_text(str(latin))
    assert why is None and text is not None and text.startswith("caf")  # a few bad bytes are still text


def test_read_many_says_what_read_bytes_says_in_c_and_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codesight_tui.core.ingest import walker

    assert walker.readfiles is not None  # built with the package: a broken build is caught here
    files = {
        "text.py": b"print('hi')\n",
        "empty.txt": b"",
        "nul.bin": b"ab\x00cd",
        "utf16.txt": "hé\n".encode("utf-16"),  # a byte-order mark, then NUL bytes: text
        "bom8.txt": b"\xef\xbb\xbfx\x00",  # a UTF-8 mark: read as it is, as read_bytes reads it
        "big.txt": b"x" * 2000,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "link.py").symlink_to(tmp_path / "text.py")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    names = [*files, "link.py", "dir", "fifo", "gone.py"]
    paths = [str(tmp_path / n) for n in names]
    expected = [
        b"print('hi')\n",
        b"",
        "binary",
        files["utf16.txt"],
        files["bom8.txt"],
        "too_large",
        "symlink",
        "special_file",
        "special_file",
        "unreadable",
    ]
    assert walker.read_many(paths, 1000, text=True) == expected
    assert walker.read_many(paths[2:3], 1000) == [b"ab\x00cd"]  # not asked for text: the bytes as they are
    monkeypatch.setattr(walker, "readfiles", None)
    assert walker.read_many(paths, 1000, text=True) == expected
