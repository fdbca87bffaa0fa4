"""The command line as users run it: real processes, exit codes, stdout and stderr."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import snapshot_tree


def run(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "codesight_tui", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=e,
        timeout=600,
    )


def test_help_and_version() -> None:
    r = run("--help")
    assert r.returncode == 0 and "index" in r.stdout and "search" in r.stdout
    assert "ask" in r.stdout.split("\n\n")[0]  # issue 35: the usage line named every command but ask
    for cmd in ("search", "related", "install"):  # and each command's usage is its own
        assert run(cmd, "--help").stdout.startswith(f"usage: codesight {cmd} ["), cmd
    assert run("--version").stdout.startswith("codesight ")


def test_index_search_status_json(repo: Path) -> None:
    r = run("index", repo, "--no-embed", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["files"] >= 8 and rep["chunks"] >= 8 and rep["skipped"]["too_large"] == 1
    r = run("search", "haversine", "--path", repo, "--mode", "bm25", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    keys = {"path", "start_line", "end_line", "score", "scope", "language", "bm25_rank", "vector_rank", "content"}
    assert keys <= set(hits[0]) and hits[0]["path"] == "src/geo.py" and hits[0]["bm25_rank"] == 1
    st = json.loads(run("status", repo, "--json").stdout)
    assert st["files"] == rep["files"] and st["chunks"] == rep["chunks"]
    assert st["vectors"] == 0 and st["pending"] == rep["chunks"] and st["changed"] == 0
    assert st["index_bytes"] > 0 and st["last_indexed"]
    (repo / "src" / "geo.py").write_text("CHANGED = 1\n")
    (repo / "src" / "new.py").write_text("NEW = 1\n")
    st = json.loads(run("status", repo, "--json").stdout)
    assert st["changed"] == 2 and st["changed_files"]["modified"] == ["src/geo.py"]


@pytest.mark.model
def test_a_cpu_leaves_the_full_pass_out_until_asked(repo: Path) -> None:
    """Issue 49: on a CPU (full_model = auto) `index` computes BM25 and the static tier and says in
    one line how to get the full model's vectors; `index --full` computes them, and from then on
    a plain `index` keeps them current."""
    env = {"CODESIGHT_DEVICE": "cpu", "CODESIGHT_STATIC_MODEL": "auto"}  # the shipped static model
    r = run("index", repo, "--json", env=env)
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "--full" in line]
    assert (
        len(said) == 1
        and said[0].startswith(
            "codesight: the full model's vectors are left out on a CPU (full_model = auto): BM25 and the static tier"
            " answer; `codesight index --full` computes the other "
        )
        and said[0].endswith(" here)")
    ), said
    st = json.loads(run("status", repo, "--json", env=env).stdout)
    assert st["vectors"] == 0 and st["static_vectors"] == st["chunks"] > 0
    r = run("index", repo, "--full", "--json", env=env)
    assert r.returncode == 0 and "--full" not in r.stderr, r.stderr
    st = json.loads(run("status", repo, "--json", env=env).stdout)
    assert st["vectors"] == st["chunks"]
    (repo / "src" / "tally.py").write_text("def tally(xs):\n    return sum(xs)\n")
    r = run("index", repo, "--json", env=env)
    st = json.loads(run("status", repo, "--json", env=env).stdout)
    assert r.returncode == 0 and "--full" not in r.stderr and st["vectors"] == st["chunks"]
    both = run("index", repo, "--full", "--static-only", env=env)
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1


def test_vectors_from_the_shared_cache_start_no_full_model_on_a_cpu(repo: Path, tmp_path: Path) -> None:
    """Issue 66 items 15 and 16: a copy of a repository whose vectors the shared cache partly held
    got them, and then every index run and the TUI embedded the rest with the full model (two
    processes at 90% CPU, "ETA 18m"), since an index with vectors counted as one the full model
    was asked for. Cached vectors are used; the rest is computed only when asked (`--full`), and
    `index`, `status` and `search --full` say how, with its cost here."""
    from conftest import build_repo

    env = {"CODESIGHT_DEVICE": "cpu", "CODESIGHT_STATIC_MODEL": "auto"}
    half = build_repo(tmp_path / "half")  # the same files, less some
    for p in sorted(half.rglob("*.js")) + sorted(half.rglob("*.md")):
        p.unlink()
    assert run("index", half, "--full", "--json", env=env).returncode == 0
    first = run("index", repo, "--json", env=env)
    report = json.loads(first.stdout)
    assert first.returncode == 0 and report["embedded"] == 0 and report["cache_hits"] > 0, first.stderr
    assert report["vectors_pending"] > 0
    assert f"({report['cache_hits']:,} from the shared cache are used)" in first.stderr
    assert f"`codesight index --full` computes the other {report['vectors_pending']:,} (about " in first.stderr
    st = json.loads(run("status", repo, "--json", env=env).stdout)
    assert st["full_pass"] is False and st["vectors"] == report["cache_hits"] and st["pending"] > 0
    text = run("status", repo, env=env).stdout
    assert f"{st['pending']:,} not computed on a CPU (`codesight index --full`: about " in text
    again = json.loads(run("index", repo, "--json", env=env).stdout)  # vectors there: still none computed
    assert again["embedded"] == 0
    probe = (
        "import sys, json; from codesight_tui import CodeSight; cs = CodeSight(sys.argv[1]); r = cs.index();"
        " print(json.dumps([cs.full_pass(), r.embedded, 'torch' in sys.modules, 'onnxruntime' in sys.modules]))"
    )
    api = subprocess.run(
        [sys.executable, "-c", probe, str(repo)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **env),
    )
    assert json.loads(api.stdout.strip().splitlines()[-1]) == [False, 0, False, False], api.stderr[-2000:]
    found = run("search", "haversine", "--path", repo, "--full", env=env)
    assert found.returncode == 0 and "index incomplete: vectors cover " in found.stderr
    assert "(`codesight index --full` computes them: about " in found.stderr
    full = json.loads(run("index", repo, "--full", "--json", env=env).stdout)  # asked: computed, and kept from then on
    assert full["embedded"] == report["vectors_pending"] and full["vectors_pending"] == 0
    assert json.loads(run("status", repo, "--json", env=env).stdout)["full_pass"] is True


def test_human_output(repo: Path) -> None:
    run("index", repo, "--no-embed")
    r = run("search", "verify password", "--path", repo, "--mode", "bm25", "-n", "2")
    first = r.stdout.splitlines()[0]
    assert first.startswith("src/auth.py:") and "def " in first
    r = run("status", repo)
    assert "chunks" in r.stdout and "pending" in r.stdout and "changed" in r.stdout


def test_vimgrep_lines_and_related(repo: Path) -> None:
    """--vimgrep prints path:line:col:text as rg does, with paths the editor can open from the
    current directory; `related` finds code like a place and leaves the place out."""
    (repo / "src" / "distance.py").write_text(
        "import math\n\n\ndef great_circle(lat_a, lon_a, lat_b, lon_b):\n    radius = 6371.0\n"
        "    dlat = math.radians(lat_b - lat_a)\n    dlon = math.radians(lon_b - lon_a)\n"
        "    return 2 * radius * math.asin(math.sqrt(math.sin(dlat / 2) ** 2 + math.sin(dlon / 2) ** 2))\n"
    )
    run("index", repo, "--no-embed")
    r = run("search", "haversine", "--mode", "bm25", "--vimgrep", cwd=repo)
    assert r.returncode == 0, r.stderr
    path, line, col, text = r.stdout.splitlines()[0].split(":", 3)
    assert path == "src/geo.py" and "haversine" in text and text[int(col) - 1 :].startswith("haversine")
    assert (repo / path).read_text().splitlines()[int(line) - 1] == text
    r = run("search", "haversine", "--path", repo, "--mode", "bm25", "--vimgrep", cwd=repo.parent)
    assert r.stdout.startswith(f"{repo.name}/src/geo.py:{line}:{col}:")
    assert run("search", "x", "--json", "--vimgrep", cwd=repo).returncode == 2
    r = run("related", f"src/geo.py:{line}", "--mode", "bm25", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits[0]["path"] == "src/distance.py"
    assert not any(h["path"] == "src/geo.py" and h["start_line"] <= int(line) <= h["end_line"] for h in hits)
    r = run("related", "haversine", "--mode", "bm25", "--vimgrep", cwd=repo)
    assert r.returncode == 0 and r.stdout.startswith("src/distance.py:")
    for bad, msg in (
        ("src/none.py:4", "src/none.py: no such file"),
        ("/etc/passwd:1", "not inside"),
        ("/etc/no-such-file:1", "not inside"),
        ("Nowhere", "no file or definition"),
    ):
        r = run("related", bad, cwd=repo)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, (bad, r.stderr)


def test_language_names_take_any_case_and_the_usual_aliases(repo: Path) -> None:
    run("index", repo, "--no-embed")
    for spelled in ("python", "Python", "py", ".py"):
        r = run("search", "haversine", "--path", repo, "--mode", "bm25", "--lang", spelled, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)[0]["path"] == "src/geo.py", (spelled, r.stderr)
    r = run("search", "haversine", "--path", repo, "--lang", "klingon")
    assert r.returncode == 2 and "unknown language 'klingon'" in r.stderr and "python" in r.stderr


def test_search_indexes_first_when_needed(repo: Path) -> None:
    r = run("search", "parse config file", "--path", repo, "--mode", "bm25", "--json")
    assert r.returncode == 0 and "indexing first" in r.stderr
    assert {h["path"] for h in json.loads(r.stdout)} >= {"src/config_loader.py", "web/client.js"}


def test_a_path_outside_the_repository_here_is_searched_as_rg_would(repo: Path, tmp_path: Path) -> None:
    """Issue 66 item 24: `codesight search retry /path/to/other/repo` from another repository
    searched (and first indexed) the current one; rg searches the path given."""
    (repo / ".git").mkdir(exist_ok=True)
    here = tmp_path / "here"
    (here / ".git").mkdir(parents=True)
    (here / "local.py").write_text("def haversine_here():\n    return 0\n")
    r = run("search", "haversine", str(repo), "--mode", "bm25", "--json", cwd=here)
    assert r.returncode == 0, r.stderr
    paths = {h["path"] for h in json.loads(r.stdout)}
    assert "src/geo.py" in paths and "local.py" not in paths
    r = run("search", "haversine", str(repo / "src"), "--mode", "bm25", "--json", cwd=here)
    assert r.returncode == 0 and {h["path"] for h in json.loads(r.stdout)} <= {p for p in paths if p.startswith("src/")}
    assert not any(p.name == "index.db" for p in (here).rglob("*"))
    r = run("search", "haversine", str(repo), "--mode", "bm25", "--json", "--path", str(here), cwd=tmp_path)
    assert r.returncode == 0 and {h["path"] for h in json.loads(r.stdout)} == {"local.py"}  # --path said where


def test_no_results_exit_code(repo: Path) -> None:
    run("index", repo, "--no-embed")
    r = run("search", "zzzqqq", "--path", repo, "--mode", "bm25")
    assert r.returncode == 1 and "no results" in r.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (("index", "/definitely/not/here"), "no such directory"),
        (("search", "x", "--path", "/definitely/not/here"), "no such directory"),
        (("status", "/definitely/not/here"), "no such directory"),
    ],
)
def test_missing_path_is_one_clear_line(args: tuple[str, ...], needle: str) -> None:
    r = run(*args)
    assert r.returncode == 2 and needle in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_file_instead_of_directory(repo: Path) -> None:
    r = run("index", repo / "src" / "geo.py")
    assert r.returncode == 2 and "not a directory" in r.stderr and "Traceback" not in r.stderr
    r = run(repo / "src" / "geo.py")  # the TUI entry point checks too, before starting
    assert r.returncode == 2 and "not a directory" in r.stderr


def test_unwritable_data_dir(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    r = run("index", repo, env={"CODESIGHT_DATA_DIR": str(blocker / "data")})
    assert r.returncode == 2 and "cannot write index" in r.stderr and "Traceback" not in r.stderr


def test_corrupt_index_is_rebuilt_and_said_so(repo: Path) -> None:
    run("index", repo, "--no-embed")
    st = json.loads(run("status", repo, "--json").stdout)
    from pathlib import Path

    db = Path(st["index_dir"]) / "index.db"
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"garbage" * 1000)
    r = run("search", "haversine", "--path", repo, "--mode", "bm25")
    assert r.returncode == 0 and "rebuilt" in r.stderr and "src/geo.py" in r.stdout


def test_bad_settings_and_arguments(repo: Path) -> None:
    r = run("index", repo, env={"CODESIGHT_MAX_FILE_SIZE": "lots"})
    assert r.returncode == 2 and "max_file_size" in r.stderr and "Traceback" not in r.stderr
    r = run("search", "x", "--path", repo, "--limit", "0")
    assert r.returncode == 2
    r = run("search", "x", "--path", repo, "--mode", "fuzzy")
    assert r.returncode == 2


def test_config_file_is_read(repo: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('exclude = ["server/"]\nmax_file_size = 3000000\n')
    r = run("index", repo, "--no-embed", "--json", env={"CODESIGHT_CONFIG": str(cfg)})
    rep = json.loads(r.stdout)
    assert "too_large" not in rep["skipped"]  # big.txt (2 MB) now fits
    r = run("search", "Server Start", "--path", repo, "--mode", "bm25", "--json", env={"CODESIGHT_CONFIG": str(cfg)})
    assert all(not h["path"].startswith("server/") for h in json.loads(r.stdout))


@pytest.mark.model
def test_repository_is_byte_for_byte_unchanged(repo: Path) -> None:
    before = snapshot_tree(repo)
    assert run("index", repo).returncode == 0
    assert run("search", "great circle distance", "--path", repo).returncode == 0
    assert run("search", "haversine", "--path", repo, "--mode", "bm25").returncode == 0
    assert run("status", repo).returncode == 0
    assert snapshot_tree(repo) == before


PROBE = """
import sys
from codesight_tui.cli import main
try:
    main({argv!r})
finally:
    heavy = sorted(m for m in ("torch", "sentence_transformers", "lancedb", "textual") if m in sys.modules)
    print("HEAVY=" + ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv", [["--help"], ["status", "{repo}"], ["search", "haversine", "--path", "{repo}", "--mode", "bm25"]]
)
def test_light_commands_never_import_torch(repo: Path, argv: list[str]) -> None:
    run("index", repo, "--no-embed")
    argv = [a.format(repo=repo) for a in argv]
    r = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True)
    assert "HEAVY=\n" in r.stderr or r.stderr.rstrip().endswith("HEAVY="), r.stderr


def test_search_during_another_process_first_index_searches_what_is_there(repo: Path, tmp_path: Path) -> None:
    # Issue 22, fault 5: a search while another process builds the first index used to exit 3 ("busy").
    import os
    import subprocess
    import sys

    from filelock import FileLock

    from codesight_tui import CodeSight

    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"))
    cs = CodeSight(repo, data_dir=tmp_path / "data")
    cs.index(embed=False)
    cs.store.conn.execute("DELETE FROM meta WHERE key='last_indexed'")  # as if its first run were still going
    with FileLock(str(cs.index_dir / "write.lock")):
        r = subprocess.run(
            [sys.executable, "-m", "codesight_tui", "search", "haversine", "--path", str(repo), "--mode", "bm25"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert r.returncode == 0, r.stderr
    assert "src/geo.py" in r.stdout and "searching what it has indexed so far" in r.stderr


def test_usage_errors_say_what_is_wrong(repo: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"))

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", *a],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    r = run("search", "  ", "--path", str(repo))
    assert r.returncode == 2 and "query is empty" in r.stderr
    r = run("search", "geo", "--lang", "klingon", "--path", str(repo))
    assert r.returncode == 2 and "unknown language 'klingon'" in r.stderr and "python" in r.stderr
    r = run(str(repo))  # the TUI with no terminal: a hint, not a megabyte of escape codes
    assert r.returncode == 2 and "codesight search" in r.stderr and r.stdout == ""
    # issue 66 item 20: a mistyped command was "no such directory: serach"
    r = run("serach", "x")
    assert (
        r.returncode == 2
        and r.stderr == "codesight: 'serach' is not a command or a directory; the most similar command is `search`\n"
    )
    r = run("calers", "x")
    assert r.returncode == 2 and "the most similar command is `callers`" in r.stderr
    r = run("nowhere-at-all")
    assert r.returncode == 2 and "no such directory: nowhere-at-all" in r.stderr
    # issue 66 items 20 and 22: not defined is one line on stderr; a newline in a name is one name
    assert run("index", str(repo)).returncode == 0
    for args in (("def", "NoSuchThing"), ("refs", "a\nb"), ("callers", "a\nb")):
        r = run(*args, "--path", str(repo))
        assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r
    assert "a\\nb" in r.stderr


def test_help_shows_the_terminal_ui_form_first() -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "codesight_tui", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("usage: codesight [PATH ...]\n")


def test_every_surface_uses_the_repository_root(repo: Path, tmp_path: Path) -> None:
    # Issue 20, item 11: `codesight search` in a sub-directory built a separate index of it.
    (repo / ".git").mkdir()
    sub = repo / "src"
    r = run("index", "--no-embed", "--json", cwd=sub)
    assert r.returncode == 0, r.stderr
    r = run("status", "--json", cwd=sub)
    assert json.loads(r.stdout)["root"] == str(repo) and json.loads(r.stdout)["files"] >= 8
    r = run("search", "start server", "--mode", "bm25", "--json", cwd=sub)
    assert any(h["path"] == "server/main.go" for h in json.loads(r.stdout))  # the whole repository
    r = run("status", "--json", "src", cwd=repo)
    assert json.loads(r.stdout)["root"] == str(repo)


def test_a_large_tree_outside_a_repository_asks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codesight_tui import cli
    from codesight_tui.cli import roots

    tree = tmp_path / "big"
    for d in range(3):
        (tree / f"d{d}").mkdir(parents=True)
        for f in range(4):
            (tree / f"d{d}" / f"f{f}.py").write_text(f"x = {f}\n")
    monkeypatch.setattr(roots, "LARGE_TREE_FILES", 10)
    assert cli.main(["index", str(tree), "--no-embed"]) == 2  # no terminal to ask on: say how
    err = capsys.readouterr().err
    assert "not a git repository" in err and "over 10 files" in err and "--yes" in err
    assert cli.main(["search", "x", "--path", str(tree), "--mode", "bm25"]) == 2
    assert cli.main(["index", str(tree), "--no-embed", "--yes"]) == 0
    assert cli.main(["search", "x", "--path", str(tree), "--mode", "bm25"]) == 0  # indexed: no question
    # on a terminal, the answer decides
    other = tmp_path / "big2"
    other.mkdir()
    for f in range(12):
        (other / f"f{f}.py").write_text("y = 1\n")
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty("n\n"))
    told = Tty()
    monkeypatch.setattr(sys, "stderr", told)
    assert cli.main(["index", str(other), "--no-embed"]) == 2
    assert "Index all of it? [y/N]" in told.getvalue()
    monkeypatch.setattr(sys, "stdin", Tty("y\n"))
    assert cli.main(["index", str(other), "--no-embed"]) == 0


def test_search_across_repositories_is_one_labelled_list(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 19: `codesight search Q --path A --path B`, and `--all` over the config's saved set.
    import json

    from codesight_tui.cli import main

    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "distance.py").write_text("def haversine_miles(a, b):\n    return 0\n")
    assert main(["search", "haversine", "--path", str(repo), "--path", str(other), "--mode", "bm25", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert {h["repo"] for h in hits} == {str(repo), str(other)}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)  # issue 35: the list is in the order of the scores shown
    assert main(["search", "haversine", "--path", str(repo), "--path", str(other), "--mode", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "[other] distance.py:1-2" in out and "[repo] src/geo.py" in out
    config = tmp_path / "config.toml"
    config.write_text(f'repos = ["{repo}", "{other}"]\n')
    monkeypatch.setenv("CODESIGHT_CONFIG", str(config))
    assert main(["search", "haversine", "--all", "--mode", "bm25", "--json"]) == 0
    assert {h["repo"] for h in json.loads(capsys.readouterr().out)} == {str(repo), str(other)}
    monkeypatch.setenv("CODESIGHT_CONFIG", str(tmp_path / "none.toml"))
    assert main(["search", "haversine", "--all"]) == 2
    assert "no saved repositories" in capsys.readouterr().err


def test_a_repository_json_py_does_not_shadow_the_standard_library(tmp_path: Path) -> None:
    # Found by the torture harness: `python -m codesight_tui mcp` run inside rich's source (which
    # has a json.py) died on its first import.
    import subprocess
    import sys

    (tmp_path / "json.py").write_text("raise SystemExit('shadowed')\n")
    (tmp_path / "typing.py").write_text("raise SystemExit('shadowed')\n")
    r = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "index", ".", "--no-embed", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "shadowed" not in r.stderr, r.stderr


def test_related_takes_paths_from_the_current_directory_and_any_line_number(repo: Path) -> None:
    """Issue 48 items 12 and 15: `related mod.py:10` in repo/src means repo/src/mod.py, as the
    vimgrep output there says; a line number too large for any file (or for int()) is one line."""
    run("index", repo, "--no-embed")
    src = repo / "src"
    r = run("search", "haversine", "--mode", "bm25", "--vimgrep", cwd=src)
    path, line = r.stdout.splitlines()[0].split(":")[:2]
    assert path == "geo.py"
    r = run("related", f"{path}:{line}", "--mode", "bm25", "--json", cwd=src)
    assert r.returncode in (0, 1) and "not indexed" not in r.stderr, r.stderr  # found (1: nothing like it here)
    assert all(
        h["path"] != "src/geo.py" or not h["start_line"] <= int(line) <= h["end_line"] for h in json.loads(r.stdout)
    )
    r = run("related", f"src/geo.py:{line}", "--mode", "bm25", cwd=repo)  # from the root, as before
    assert r.returncode in (0, 1) and "not indexed" not in r.stderr, r.stderr
    for digits in ("99999999999999999999999", "9" * 5000):
        r = run("related", f"src/geo.py:{digits}", "--mode", "bm25", cwd=repo)
        assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-300:]
        assert "has no line" in r.stderr


def test_a_path_after_the_query_is_where_to_look(repo: Path) -> None:
    """Issue 48 item 16: `codesight search verify src/` searches src/ for "verify", as rg does."""
    run("index", repo, "--no-embed")
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "verify.md").write_text("# Verify\\n\\nHow we verify a password hash.\\n")
    run("index", repo, "--no-embed")
    r = run("search", "verify", "password", "src/", "--mode", "bm25", "--json", "--verbose", cwd=repo)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits and all(h["path"].startswith("src/") for h in hits)
    assert "src/ is a path here" in r.stderr
    r = run("search", "verify", "password", "--mode", "bm25", "--json", cwd=repo)
    assert any(h["path"].startswith("docs/") for h in json.loads(r.stdout))  # without it, everywhere
    r = run("search", "src/", "--mode", "bm25", "--json", cwd=repo)  # the only word stays the query
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr


def test_related_to_a_whole_file_goes_by_its_definitions_not_its_imports(repo: Path) -> None:
    """Issue 48 item 26: `related FILE` matched other files' import blocks (its first chunk);
    a whole file is represented by its definitions, and none of it comes back."""
    names = [f"Name{i}Type" for i in range(60)]
    imports = "from typing import (\n" + "".join(f"    {n},\n" for n in names) + ")\nimport os\nimport sys\n\n\n"
    (repo / "src" / "wrap.py").write_text(
        imports + "".join(f"CONSTANT_{i} = {i}\n" for i in range(40)) + "\n\n" + "def wrap_paragraph(text, width):\n"
        "    words = text.split()\n    lines, line = [], ''\n"
        "    for word in words:\n        if len(line) + len(word) > width:\n"
        "            lines.append(line)\n            line = word\n"
        "        else:\n            line = (line + ' ' + word).strip()\n"
        "    return lines + [line]\n"
    )
    (repo / "src" / "other.py").write_text(imports + "def load_settings(path):\n    return open(path).read()\n")
    (repo / "src" / "textfill.py").write_text(
        "def fill_text_to_width(text, width):\n    words = text.split()\n"
        "    out = []\n    for word in words:\n        out.append(word)\n"
        "    return ' '.join(out)[:width]\n"
    )
    run("index", repo, "--no-embed")
    r = run("related", "src/wrap.py", "--mode", "bm25", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits[0]["path"] == "src/textfill.py", [(h["path"], h["start_line"]) for h in hits]
    assert not any(h["path"] == "src/wrap.py" for h in hits)


def test_the_plain_output_names_the_lists_that_found_each_hit() -> None:
    """Issue 48 item 24: a static-tier hit was tagged bm25+vec while --json said vector_rank null."""
    from codesight_tui.cli.printer import retriever_tag
    from codesight_tui.core.search.contract import SearchResult

    def hit(**ranks: int) -> SearchResult:
        return SearchResult(
            "a.py",
            1,
            2,
            "",
            "python",
            0.1,
            ranks.get("bm25"),
            ranks.get("vector"),
            "x",
            1,
            static_rank=ranks.get("static"),
            definition=bool(ranks.get("definition")),
        )

    assert retriever_tag(hit(bm25=2, static=1)) == "bm25+static"
    assert retriever_tag(hit(bm25=1, vector=3)) == "bm25+vec"
    assert retriever_tag(hit(static=4)) == "static"
    assert retriever_tag(hit(bm25=1, static=2, vector=3)) == "bm25+static+vec"
    assert retriever_tag(hit(definition=True)) == "definition"


def test_def_refs_callers_callees(nav_repo: Path) -> None:
    """Issue 51: the four commands, their formats and exit codes, from a subdirectory."""
    r = run("callers", "evict", cwd=nav_repo / "store")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == [
        "LRUCache.evict: resolved, def at cache.py:18",
        "cache.py",
        "     16  self.evict()  [call in LRUCache.put]",
    ]
    r = run("refs", "LRUCache", "--vimgrep", cwd=nav_repo)
    assert r.stdout.splitlines() == [
        "app/service.py:1:25:from store.cache import LRUCache",
        "app/service.py:5:12:    return LRUCache(10)",
        "store/cache.py:5:7:class LRUCache:",
    ]
    out = json.loads(run("callees", "app/service.py:9", "--json", cwd=nav_repo).stdout)
    assert out["symbol"]["name"] == "lookup" and [s["target"]["path"] for s in out["sites"]] == [
        "app/service.py",
        "store/cache.py",
        "store/cache.py",
    ]
    r = run("def", "fetchUser", "-g", "*.py", cwd=nav_repo)
    assert r.returncode == 1 and r.stderr == "codesight: no definitions of fetchUser in the paths that -g/-l keep\n"
    r = run("refs", "request", "-l", "typescript", "--vimgrep", cwd=nav_repo)
    assert [line.split(":")[1] for line in r.stdout.splitlines()] == ["3", "6"]  # not the comment on line 1
    assert run("callers", "nothing_by_this_name", cwd=nav_repo).returncode == 1
    r = run("callers", "", cwd=nav_repo)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run("refs", "x", "--json", "--vimgrep", cwd=nav_repo)
    assert r.returncode == 2


def test_a_long_index_run_off_a_terminal_says_how_far_it_is_every_minute(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 66 item 16: `index --full` with its output in a file printed nothing for 17 minutes."""
    from codesight_tui.cli.progress import ProgressView
    from codesight_tui.core.index.indexer import Progress

    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    view = ProgressView(False, plain=True)
    view(Progress("embed", 0, 9_828))
    for done in (500, 1_000, 1_500):
        now[0] += 30
        view(Progress("embed", done, 9_828))
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["codesight: full model's vectors: 1,000/9,828 (10%), about 9 min left"], lines
    quiet = ProgressView(False, plain=False)  # a caller that wants no progress gets none
    now[0] += 600
    quiet(Progress("embed", 2_000, 9_828))
    assert capsys.readouterr().err == ""


def test_the_status_bar_counts_vectors_as_status_does_and_says_how_to_get_the_rest() -> None:
    """Issue 66 item 16: the TUI's "vectors 2% (ETA 18m)" was of the run's pending chunks where
    `status` said 3,968 done and 5,860 pending; with the full model off, it says how to get them."""
    from codesight_tui.tui.widgets.status import IndexState

    st = IndexState()
    st.chunks, st.vectors = 9_828, 3_968
    st.start_phase("embed", 0.0, 0)
    st.progress(100, 5_860, 10.0)
    assert "vectors 40%" in st.freshness(10.0)
    st.phase, st.model_state = "idle", "off"
    assert st.freshness(20.0).endswith("vectors 40% (index --full)")


def test_each_call_writes_to_its_own_context_never_to_the_process_streams(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 67 item 3: the service set ``cli.WORKSPACE`` and swapped ``sys.stdout`` for the whole
    process. A call runs in the ``Context`` it is given: two at once in two threads each get their
    own answer, help and usage errors included, and nothing reaches the process's streams."""
    import io
    import threading

    from codesight_tui import cli

    assert cli.run(["index", str(repo), "--no-embed"], context=cli.Context(out=io.StringIO(), err=io.StringIO())) == 0
    calls = {
        "haversine": ["search", "haversine", "--path", str(repo), "--mode", "bm25", "--vimgrep"],
        "password": ["search", "verify password", "--path", str(repo), "--mode", "bm25", "--vimgrep"],
        "help": ["search", "--help"],
        "usage": ["search", "x", "--limit", "0"],
    }
    contexts = {k: cli.Context(out=io.StringIO(), err=io.StringIO()) for k in calls}
    codes: dict[str, int] = {}

    def one(key: str) -> None:
        for _ in range(5):
            try:
                codes[key] = cli.run(calls[key], context=contexts[key])
            except SystemExit as exc:  # --help
                codes[key] = int(exc.code or 0)

    threads = [threading.Thread(target=one, args=(k,)) for k in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    out = {k: c.out.getvalue() for k, c in contexts.items() if isinstance(c.out, io.StringIO)}
    err = {k: c.err.getvalue() for k, c in contexts.items() if isinstance(c.err, io.StringIO)}
    assert codes == {"haversine": 0, "password": 0, "help": 0, "usage": 2}
    assert "src/geo.py" in out["haversine"] and "auth" not in out["haversine"]
    assert "src/auth.py" in out["password"] and "geo.py" not in out["password"]
    assert out["help"].startswith("usage: codesight search") and not err["help"]
    assert err["usage"] == "codesight: --limit takes 1 to 1,000 results\n" * 5 and not out["usage"]
    assert capsys.readouterr() == ("", "")
