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


def run(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME",)}
    env.update(HOME=str(home), PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    return subprocess.run(
        [sys.executable, "-m", "codesight_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home,
        timeout=120,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
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


def test_install_writes_each_agents_own_format_and_keeps_the_users_entries(home: Path) -> None:
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
    backups = Path(os.environ["CODESIGHT_DATA_DIR"]) / "install-backups"  # first backups, outside the agents' folders
    assert sorted(p.read_text() for p in backups.iterdir()) == sorted(
        [CLAUDE_JSON, CODEX_TOML, "# House rules\n\nUse tabs.\n"]
    )
    assert not list(home.rglob("*.codesight.bak"))
    assert oct((home / ".cursor" / "mcp.json").stat().st_mode & 0o777) == "0o600"
    for name in ("claude-code", "cursor", "codex", "gemini", "opencode"):
        assert name + ":" in r.stdout


def test_a_second_run_changes_nothing_and_says_so(home: Path) -> None:
    assert run(home, "install").returncode == 0
    before = snapshot(home)
    r = run(home, "install")
    assert r.returncode == 0 and r.stdout.count("already set up") == 5 and "nothing changed" in r.stdout
    assert snapshot(home) == before


def test_dry_run_shows_the_diff_and_changes_nothing(home: Path) -> None:
    before = snapshot(home)
    r = run(home, "install", "codex", "--dry-run")
    assert r.returncode == 0
    assert "+[mcp_servers.codesight]" in r.stdout and "--- " in r.stdout and "+++ " in r.stdout
    assert snapshot(home) == before


def test_uninstall_gives_back_the_files_as_they_were(home: Path) -> None:
    before = snapshot(home)
    assert run(home, "install").returncode == 0
    r = run(home, "uninstall")
    assert r.returncode == 0, r.stderr
    after = snapshot(home)
    for rel in (".claude.json", ".codex/config.toml", ".gemini/GEMINI.md"):
        assert after[rel] == before[rel], rel
    assert not (home / ".claude" / "CLAUDE.md").exists()  # made by install, empty without the block
    assert not (home / ".cursor" / "mcp.json").exists()  # made by install: removed, not left as a skeleton
    assert after == before  # every file of the home as it was, byte for byte, and nothing left behind
    assert run(home, "uninstall").stdout.count("not set up") == 5


def test_a_file_that_does_not_parse_is_refused_and_left_alone(home: Path) -> None:
    bad = '{\n  // my servers\n  "mcpServers": {}\n}\n'  # comments: fine for Cursor, not for Claude Code
    (home / ".claude.json").write_text(bad)
    r = run(home, "install", "claude-code")
    assert r.returncode == 1 and "not plain JSON" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (home / ".claude.json").read_text() == bad
    bad = '{\n  "mcpServers": {\n'
    (home / ".cursor" / "mcp.json").write_text(bad)
    r = run(home, "install", "cursor")
    assert r.returncode == 1 and "not JSON (comments allowed)" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert (home / ".cursor" / "mcp.json").read_text() == bad
    (home / ".codex" / "config.toml").write_text("[mcp_servers\n")
    r = run(home, "install", "codex")
    assert r.returncode == 1 and "not valid TOML" in r.stderr
    assert run(home, "install", "klingon").returncode == 2


def test_project_level_and_a_named_agent_that_is_absent(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "AGENTS.md").write_text("# Agents\n")
    r = run(home, "install", "claude-code", "copilot", "opencode", "--project", str(project / "src"))
    assert r.returncode == 0, r.stderr
    root = project.resolve()
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["codesight"]
    # files a team commits name no path of this machine: the agent starts `codesight mcp` in the project
    assert (
        mcp["command"] == "codesight"
        and mcp["args"] == ["mcp"]
        and str(root) not in (project / ".mcp.json").read_text()
    )
    assert json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["codesight"]["type"] == "stdio"
    assert "not found here" in r.stdout  # VS Code was named, not found: set up all the same, and said
    assert (project / "AGENTS.md").read_text().startswith("# Agents\n") and agents.BEGIN in (
        project / "AGENTS.md"
    ).read_text()
    assert (project / ".github" / "copilot-instructions.md").exists()
    assert json.loads((home / ".claude.json").read_text())["mcpServers"].keys() == {"other"}  # user files untouched


def test_a_symlinked_dotfile_keeps_its_link(home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    real.write_text(CLAUDE_JSON)
    (home / ".claude.json").unlink()
    (home / ".claude.json").symlink_to(real)
    assert run(home, "install", "claude-code").returncode == 0
    assert (home / ".claude.json").is_symlink()
    assert "codesight" in json.loads(real.read_text())["mcpServers"]


def test_no_agent_here_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(empty, "install")
    assert r.returncode == 1 and "no coding agent found" in r.stderr and not list(empty.iterdir())


def test_links_planted_in_a_project_are_never_followed_out_of_it(home: Path, tmp_path: Path) -> None:
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


# --- issue 48: items 5, 6, 7, 14, 19, 21 and the dry run's last line ------------------------------


def test_codex_toml_with_dotted_keys_or_an_inline_table_keeps_every_entry(home: Path) -> None:
    """Item 5: dotted keys and inline tables are the user's; install adds a table of its own and
    uninstall gives the file back byte for byte (an empty [mcp_servers] with a comment included)."""
    config = home / ".codex" / "config.toml"
    for text in (
        'model = "o3"\nmcp_servers.other.command = "x"\nmcp_servers.other.args = ["-v"]\n',
        'mcp_servers = { other = { command = "x", args = ["-v"] } }\n',
        "# mine\n[mcp_servers]\n# servers go here\n",
        'model = "o3"',
    ):  # no final newline
        config.write_text(text)
        r = run(home, "install", "codex")
        assert r.returncode == 0 and "Traceback" not in r.stderr, (text, r.stderr)
        data = tomllib.loads(config.read_text())
        assert data["mcp_servers"]["codesight"]["args"] == ["mcp"], text
        if "other" in text:
            assert data["mcp_servers"]["other"] == {"command": "x", "args": ["-v"]}, text
        r = run(home, "uninstall", "codex")
        assert r.returncode == 0, r.stderr
        assert config.read_text() == text


def test_a_hand_made_entry_is_kept_and_backups_are_the_first_ones(home: Path) -> None:
    """Item 6: a "codesight" entry install did not write stays (unless --force), and uninstall
    after --force gives it back."""
    mine = {"command": "/opt/cs/bin/codesight", "args": ["mcp", "--root", "/src/a"], "env": {"X": "1"}}
    text = json.dumps({"mcpServers": {"codesight": mine}}, indent=2) + "\n"
    (home / ".claude.json").write_text(text)
    r = run(home, "install", "claude-code")
    assert r.returncode == 1 and "not one install wrote" in r.stdout and "--force" in r.stdout
    assert (home / ".claude.json").read_text() == text
    assert run(home, "install", "claude-code", "--force").returncode == 0
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["codesight"] != mine
    assert run(home, "install", "claude-code", "--force").returncode == 0  # a second run: the first backup stays
    backups = list((Path(os.environ["CODESIGHT_DATA_DIR"]) / "install-backups").glob("*-.claude.json"))
    assert [b.read_text() for b in backups] == [text]
    assert run(home, "uninstall", "claude-code").returncode == 0
    assert (home / ".claude.json").read_text() == text  # the user's own entry is back


def test_uninstall_undoes_a_project_install_byte_for_byte(home: Path, tmp_path: Path) -> None:
    """Item 7: six agents into a project, then out: every file as it was (CRLF, missing final
    newline and all), no skeletons, no backups in the repository, exit 0; Codex and OpenCode
    share AGENTS.md, and removing one keeps the other's block."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_bytes(b"# Rules\r\n\r\nBe kind.\r\n")
    (project / "AGENTS.md").write_bytes(b"# Agents")  # no final newline
    (project / "opencode.json").write_bytes(b'{\n  "theme": "dark"\n}')
    before = snapshot(project)
    names = ["claude-code", "cursor", "codex", "gemini", "opencode", "copilot"]
    assert run(home, "install", *names, "--project", str(project)).returncode == 0
    assert agents.BEGIN in (project / "AGENTS.md").read_text()
    assert (project / "CLAUDE.md").read_bytes().count(b"\r\n") > 3 and b"\n\n" not in (
        project / "CLAUDE.md"
    ).read_bytes()
    r = run(home, "uninstall", "codex", "--project", str(project))
    assert r.returncode == 0, r.stderr
    assert agents.BEGIN in (project / "AGENTS.md").read_text()  # OpenCode still uses it
    r = run(home, "uninstall", *names, "--project", str(project))
    assert r.returncode == 0, r.stdout + r.stderr
    assert snapshot(project) == before
    # all six in and out in one go each: Codex and OpenCode each see what the other did to AGENTS.md
    assert run(home, "install", *names, "--project", str(project)).returncode == 0
    assert run(home, "uninstall", *names, "--project", str(project)).returncode == 0
    assert snapshot(project) == before
    assert not [p for p in project.rglob("*") if p.is_dir() and p.name != ".git"]


def test_jsonc_settings_are_edited_and_one_bad_file_does_not_block_the_others(home: Path) -> None:
    """Item 14: VS Code's mcp.json with comments and a trailing comma is edited in place; a file
    that does not parse skips its agent in one line and the others are set up."""
    code = home / ".xdg-code" / "Code" / "User"
    code.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {\n    "other": {"command": "x"}, /* keep */\n  },\n}\n'
    (code / "mcp.json").write_text(text)
    (home / ".gemini" / "settings.json").write_text("{ not json")
    env_home = {"XDG_CONFIG_HOME": str(home / ".xdg-code")}
    r = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "install"],
        capture_output=True,
        text=True,
        env=os.environ | {"HOME": str(home)} | env_home,
        cwd=home,
        timeout=120,
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "gemini" in r.stderr, r.stderr
    assert "claude-code:" in r.stdout and "codex:" in r.stdout and "copilot:" in r.stdout
    edited = (code / "mcp.json").read_text()
    assert "// my servers" in edited and "/* keep */" in edited and '"codesight"' in edited


def test_a_read_only_file_is_left_alone(home: Path) -> None:
    """Item 19: a 0444 settings file is not replaced behind the user's back."""
    settings = home / ".gemini" / "settings.json"
    settings.write_text('{"theme": "dark"}\n')
    settings.chmod(0o444)
    r = run(home, "install", "gemini")
    assert r.returncode == 1 and "read-only" in r.stderr and "Traceback" not in r.stderr
    assert settings.read_text() == '{"theme": "dark"}\n' and settings.stat().st_mode & 0o777 == 0o444


def test_project_detection_and_agent_names_after_project(home: Path, tmp_path: Path) -> None:
    """Item 21: a project's own files say which agents it uses; `--project NAME ...` takes the
    names as agents."""
    project = tmp_path / "p2"
    (project / ".git").mkdir(parents=True)
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (project / "opencode.json").write_text("{}\n")
    empty_home = tmp_path / "bare-home"
    empty_home.mkdir()
    r = run(empty_home, "install", "--project", str(project))
    assert r.returncode == 0, r.stderr
    assert "claude-code:" in r.stdout and "opencode:" in r.stdout and "cursor:" not in r.stdout
    r = run(home, "install", "--project", "cursor", "gemini", cwd=project)
    assert r.returncode == 0, r.stderr
    assert (project / ".cursor" / "mcp.json").exists() and (project / ".gemini" / "settings.json").exists()


def test_dry_run_marks_a_missing_final_newline(home: Path) -> None:
    """Item 30: a file with no final newline does not run into the next file's header."""
    (home / ".claude" / "CLAUDE.md").write_text("# Mine")
    r = run(home, "install", "claude-code", "--dry-run")
    assert "\\ No newline at end of file\n" in r.stdout
    assert not any(line.startswith("# Mine---") or line.endswith("# Mine+++") for line in r.stdout.splitlines())


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_project_files_get_the_umasks_mode_and_a_users_own_stay_private(home: Path, tmp_path: Path, umask: int) -> None:
    """Issue 66 item 5: ``install --project`` created ``.mcp.json``, ``AGENTS.md`` and ``GEMINI.md``
    0600, files a team commits. They get the umask's mode now; a user's own configuration that
    install creates stays 0600."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    old = os.umask(umask)
    try:
        (project / "CLAUDE.md").write_text("# Claude\n")
        r = run(home, "install", "claude-code", "codex", "gemini", "--project", str(project))
        assert r.returncode == 0, r.stderr
        made = [
            project / ".mcp.json",
            project / "AGENTS.md",
            project / "GEMINI.md",
            project / ".gemini/settings.json",
            project / ".codex/config.toml",
        ]
        for path in made:
            assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path
        assert (project / "CLAUDE.md").stat().st_mode & 0o777 == 0o666 & ~umask  # an edited file keeps its mode
        (home / ".claude.json").unlink()
        r = run(home, "install", "claude-code")
        assert r.returncode == 0, r.stderr
        assert (home / ".claude.json").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_a_config_that_is_not_a_regular_file_is_skipped_in_one_line(home: Path) -> None:
    """Issue 66 item 22: ``mkfifo ~/.gemini/settings.json; codesight install gemini`` hung forever."""
    os.mkfifo(home / ".gemini" / "settings.json")
    r = run(home, "install", "gemini", "claude-code")
    assert r.returncode == 1
    assert "gemini: " in r.stderr and "settings.json is not a regular file: left as is" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "codesight" in json.loads((home / ".claude.json").read_text())["mcpServers"]  # the others go on
