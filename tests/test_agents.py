"""`codesight install` / `uninstall` (issue 32) on fixture homes: every agent's file checked with
its format's own parser (json, tomllib), the user's entries and layout kept, idempotent, backed up,
atomic, and a file that does not parse left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

from codesight_tui import agents

CLAUDE_JSON = '{\n    "numStartups": 3,\n    "mcpServers": {\n        "other": {"command": "x", "args": []}\n    }\n}\n'
CODEX_TOML = '# my settings\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "y"  # keep me\n'


def run(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME",)}
    env.update(HOME=str(home), PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    return subprocess.run([sys.executable, "-m", "codesight_tui", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or home, timeout=120)


@pytest.fixture
def home(tmp_path) -> Path:
    """A home where Claude Code, Cursor, Codex, Gemini CLI and OpenCode are installed (their
    directories), with a user's own entries in two of them; VS Code is not."""
    h = tmp_path / "home"
    for d in (".claude", ".cursor", ".codex", ".gemini", ".config/opencode"):
        (h / d).mkdir(parents=True)
    (h / ".claude.json").write_text(CLAUDE_JSON)
    (h / ".codex" / "config.toml").write_text(CODEX_TOML)
    (h / ".gemini" / "GEMINI.md").write_text("# House rules\n\nUse tabs.\n")
    return h


def snapshot(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_install_writes_each_agents_own_format_and_keeps_the_users_entries(home):
    r = run(home, "install")
    assert r.returncode == 0, r.stderr
    command = agents.server_command()
    assert Path(command[0]).is_absolute() and command[-1] == "mcp"
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 3 and claude["mcpServers"]["other"] == {"command": "x", "args": []}
    assert claude["mcpServers"]["codesight"] == {"type": "stdio", "command": command[0], "args": command[1:]}
    assert '"other": {"command": "x", "args": []},' in (home / ".claude.json").read_text()  # its layout kept
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["codesight"]["command"] == command[0]
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["model"] == "o3" and codex["mcp_servers"]["other"] == {"command": "y"}
    assert codex["mcp_servers"]["codesight"] == {"command": command[0], "args": command[1:]}
    assert (home / ".codex" / "config.toml").read_text().startswith(CODEX_TOML)  # comments and all
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["codesight"]["args"] == command[1:]
    opencode = json.loads((home / ".config" / "opencode" / "opencode.json").read_text())
    assert opencode["mcp"]["codesight"] == {"type": "local", "command": command, "enabled": True}
    guide = (home / ".gemini" / "GEMINI.md").read_text()
    assert guide.startswith("# House rules\n\nUse tabs.\n") and "find_related" in guide and "grep" in guide
    for md in (".claude/CLAUDE.md", ".codex/AGENTS.md", ".config/opencode/AGENTS.md"):
        assert agents.BEGIN in (home / md).read_text()
    assert not (home / ".config" / "Code").exists()  # VS Code is not here: nothing of it touched
    assert (home / ".claude.json.codesight.bak").read_text() == CLAUDE_JSON
    assert (home / ".codex" / "config.toml.codesight.bak").read_text() == CODEX_TOML
    assert oct((home / ".cursor" / "mcp.json").stat().st_mode & 0o777) == "0o600"
    for name in ("claude-code", "cursor", "codex", "gemini", "opencode"):
        assert name + ":" in r.stdout


def test_a_second_run_changes_nothing_and_says_so(home):
    assert run(home, "install").returncode == 0
    before = snapshot(home)
    r = run(home, "install")
    assert r.returncode == 0 and r.stdout.count("already set up") == 5 and "nothing changed" in r.stdout
    assert snapshot(home) == before


def test_dry_run_shows_the_diff_and_changes_nothing(home):
    before = snapshot(home)
    r = run(home, "install", "codex", "--dry-run")
    assert r.returncode == 0
    assert "+[mcp_servers.codesight]" in r.stdout and "--- " in r.stdout and "+++ " in r.stdout
    assert snapshot(home) == before


def test_uninstall_gives_back_the_files_as_they_were(home):
    before = snapshot(home)
    assert run(home, "install").returncode == 0
    r = run(home, "uninstall")
    assert r.returncode == 0, r.stderr
    after = snapshot(home)
    for rel in (".claude.json", ".codex/config.toml", ".gemini/GEMINI.md"):
        assert after[rel] == before[rel], rel
    assert not (home / ".claude" / "CLAUDE.md").exists()  # made by install, empty without the block
    assert json.loads((home / ".cursor" / "mcp.json").read_text()) == {"mcpServers": {}}
    assert run(home, "uninstall").stdout.count("not set up") == 5


def test_a_file_that_does_not_parse_is_refused_and_left_alone(home):
    bad = '{\n  // my servers\n  "mcpServers": {}\n}\n'
    (home / ".cursor" / "mcp.json").write_text(bad)
    r = run(home, "install", "cursor")
    assert r.returncode == 1 and "not plain JSON" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (home / ".cursor" / "mcp.json").read_text() == bad
    (home / ".codex" / "config.toml").write_text("[mcp_servers\n")
    r = run(home, "install", "codex")
    assert r.returncode == 1 and "not valid TOML" in r.stderr
    assert run(home, "install", "klingon").returncode == 2


def test_project_level_and_a_named_agent_that_is_absent(home, tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "AGENTS.md").write_text("# Agents\n")
    r = run(home, "install", "claude-code", "copilot", "opencode", "--project", str(project / "src"))
    assert r.returncode == 0, r.stderr
    root = project.resolve()
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["codesight"]
    assert mcp["args"] == ["mcp", "--root", str(root)]
    assert json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["codesight"]["type"] == "stdio"
    assert "not found here" in r.stdout  # VS Code was named, not found: set up all the same, and said
    assert (project / "AGENTS.md").read_text().startswith("# Agents\n") and agents.BEGIN in (project / "AGENTS.md").read_text()
    assert (project / ".github" / "copilot-instructions.md").exists()
    assert json.loads((home / ".claude.json").read_text())["mcpServers"].keys() == {"other"}  # user files untouched


def test_a_symlinked_dotfile_keeps_its_link(home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    real.write_text(CLAUDE_JSON)
    (home / ".claude.json").unlink()
    (home / ".claude.json").symlink_to(real)
    assert run(home, "install", "claude-code").returncode == 0
    assert (home / ".claude.json").is_symlink()
    assert "codesight" in json.loads(real.read_text())["mcpServers"]


def test_no_agent_here_says_so(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(empty, "install")
    assert r.returncode == 1 and "no coding agent found" in r.stderr and not list(empty.iterdir())


def test_links_planted_in_a_project_are_never_followed_out_of_it(home, tmp_path):
    """Issue 48 item 1: a cloned repository's ``CLAUDE.md -> ~/.bashrc`` or a rule file linked to
    a file of the user's must not be appended to, replaced or deleted."""
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / ".cursor" / "rules").mkdir(parents=True)
    precious = home / "precious.txt"
    precious.write_text("keep me\n")
    bashrc = home / ".bashrc"
    bashrc.write_text("alias ll='ls -l'\n")
    (project / ".cursor" / "rules" / "codesight.mdc").symlink_to(precious)
    (project / "CLAUDE.md").symlink_to(bashrc)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / ".vscode").symlink_to(outside)  # a folder on the way out counts as well

    r = run(home, "install", "claude-code", "cursor", "copilot", "gemini", "--project", str(project))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    refused = r.stderr.strip().splitlines()
    assert len(refused) == 3 and all("links out of the project" in line for line in refused), r.stderr
    assert precious.read_text() == "keep me\n" and bashrc.read_text() == "alias ll='ls -l'\n"
    assert not list(outside.iterdir())
    assert (project / "GEMINI.md").exists()  # the agent with no planted link is still set up

    r = run(home, "uninstall", "cursor", "--project", str(project))
    assert r.returncode == 1 and "links out of the project" in r.stderr
    assert precious.read_text() == "keep me\n" and not list(home.glob("*.codesight.bak"))
