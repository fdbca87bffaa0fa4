"""``codesight grep`` as a user runs it (issue 68): ripgrep's flags, ``path:line:col:text`` lines,
exit 0 / 1 / 2, and MCP's ``grep`` tool through a real client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_tree
from surfaces import read_only, server, text_of

FILES = {
    "src/net.py": (
        "import socket\n\n\nclass Client:\n    def send(self, data):\n        try:\n"
        "            self.sock.sendall(data)\n        except ConnectionResetError:\n"
        "            log('connection reset by peer')\n        # TODO(ana): retry\n"
    ),
    "src/util.rs": "fn parse(s: &str) -> Option<u32> {\n    s.trim().parse().ok().unwrap_or(0).into()\n}\n",
    "docs/notes.md": "# Notes\n\nThe Connection Reset case.\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "repo", FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def grep(repo: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CODESIGHT_SERVICE="off")
    return subprocess.run(
        [sys.executable, "-m", "codesight_tui", "grep", *args],
        capture_output=True,
        text=True,
        cwd=cwd or repo,
        env=env,
        timeout=300,
    )


def test_lines_flags_and_exit_codes(repo: Path) -> None:
    first = grep(repo, "connection reset", "-i")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "docs/notes.md:3:5:The Connection Reset case.",
        "src/net.py:9:18:            log('connection reset by peer')",
    ]
    assert grep(repo, "unwrap_or(", "-F").stdout == "src/util.rs:2:27:    s.trim().parse().ok().unwrap_or(0).into()\n"
    nothing = grep(repo, "no such words anywhere")
    assert nothing.returncode == 1 and nothing.stdout == ""
    bad = grep(repo, "foo(bar")
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "codesight: invalid regex at column 4: missing ), unterminated subpattern"
    )
    assert "Traceback" not in bad.stderr
    assert grep(repo, "").returncode == 2
    assert grep(repo, "Reset", "-l").stdout.splitlines() == ["docs/notes.md", "src/net.py"]
    assert grep(repo, r"\w+", "-c", "src/").stdout.splitlines() == ["src/net.py:8", "src/util.rs:2"]
    assert grep(repo, "Connection", "-w").stdout.splitlines() == ["docs/notes.md:3:5:The Connection Reset case."]
    assert grep(repo, "retry", "-g", "*.md").returncode == 1
    assert grep(repo, "retry", "-t", "py").stdout.startswith("src/net.py:10:")
    hits = json.loads(grep(repo, "sendall", "--json", "-C", "1").stdout)
    assert hits == [
        {
            "path": "src/net.py",
            "line": 7,
            "column": 23,
            "text": "            self.sock.sendall(data)",
            "spans": [[22, 29]],
            "scope": "Client.send",
            "before": ["        try:"],
            "after": ["        except ConnectionResetError:"],
        }
    ]


def test_context_lines_are_merged_and_separated_as_ripgrep(repo: Path) -> None:
    out = grep(repo, "sendall|retry", "-A", "1").stdout.splitlines()
    assert out == [
        "src/net.py:7:23:            self.sock.sendall(data)",
        "src/net.py-8-        except ConnectionResetError:",
        "--",
        "src/net.py:10:22:        # TODO(ana): retry",
    ]
    vim = grep(repo, "s", "--vimgrep", "src/util.rs").stdout.splitlines()
    assert vim[0] == "src/util.rs:1:7:fn parse(s: &str) -> Option<u32> {" and len(vim) > 3


def test_from_a_subdirectory_paths_are_the_users(repo: Path) -> None:
    out = grep(repo, "unwrap_or", cwd=repo / "src")
    assert out.returncode == 0 and out.stdout.startswith("util.rs:2:"), out.stdout + out.stderr


async def test_the_mcp_grep_tool(repo: Path) -> None:
    async with server(repo) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert read_only(tools["grep"]) and tools["grep"].input_schema["required"] == ["pattern"]
        r = await client.call_tool("grep", {"pattern": "sendall", "context_lines": 1})
        assert not r.is_error, text_of(r)
        out = r.structured_content
        (match,) = out["matches"]
        assert (match["path"], match["line"], match["column"]) == ("src/net.py", 7, 23)
        assert match["scope"] == "Client.send" and match["spans"] == [[22, 29]]
        assert match["before"] == ["        try:"] and not out["truncated"]
        r = await client.call_tool("grep", {"pattern": r"\w", "limit": 2})
        assert len(r.structured_content["matches"]) == 2 and r.structured_content["truncated"]
        r = await client.call_tool("grep", {"pattern": "foo(bar"})
        assert r.is_error and "invalid regex at column 4" in text_of(r)


def test_several_repositories_and_all(tmp_path: Path) -> None:
    """Issue 68 item 4: several repositories, named or saved in the config (--all), one answer."""
    a = write_tree(tmp_path / "a", {"x.py": "shared_word = 1\n"})
    b = write_tree(tmp_path / "b", {"y.py": "other\nshared_word = 2\n"})
    for root in (a, b):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = dict(os.environ, CODESIGHT_SERVICE="off", CODESIGHT_REPOS=json.dumps([str(a), str(b)]))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", "grep", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )

    named = run("shared_word", str(a), str(b))
    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines() == ["a/x.py:1:1:shared_word = 1", "b/y.py:2:1:shared_word = 2"]
    assert run("shared_word", "--all").stdout == named.stdout
    hits = json.loads(run("shared_word", "--all", "--json").stdout)
    assert [(h["repo"], h["path"]) for h in hits] == [(str(a), "x.py"), (str(b), "y.py")]
