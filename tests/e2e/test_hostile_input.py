"""Hostile input never raises a traceback: file names that are not UTF-8, arguments with bytes that
are not UTF-8, bad path filters, and any query string at all (issue 22, faults 1 to 3)."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HashEmbedder
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from properties import examples

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.modes import Mode


@pytest.fixture
def cs(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> CodeSight:
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    return c


def test_a_file_name_that_is_not_utf8_is_skipped_and_counted(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "ok.py").write_text("def router():\n    return 1\n")
    with open(os.fsencode(root) + b"/bad\xff.py", "wb") as fh:
        fh.write(b"x = 1\n")
    c = CodeSight(root, settings=settings)
    report = c.index(embed=False)
    assert report.skipped["non_utf8_name"] == 1 and report.files == 1
    assert c.search("router", mode="bm25")[0].path == "ok.py"


def test_arguments_with_bytes_that_are_not_utf8(cs: CodeSight) -> None:
    bad = os.fsdecode(b"haversine\xff")  # what Python makes of such an argv entry
    for mode in ("hybrid", "bm25", "vector"):
        cs.search(bad, mode=mode)
        cs.search("haversine", mode=mode, glob=os.fsdecode(b"src/\xff*"))
        with pytest.raises(CodeSightError) as exc:  # a language nobody has: one line, exit 2 (issue 35)
            cs.search("haversine", mode=mode, language=os.fsdecode(b"py\xff"))
        assert exc.value.exit_code == 2 and "unknown language" in str(exc.value)
    assert cs.search(bad, mode="bm25")[0].path == "src/geo.py"


@pytest.mark.parametrize("glob", ["!", "\\"])
def test_a_bad_path_filter_is_a_usage_error_in_every_mode(cs: CodeSight, glob: str) -> None:
    for mode in ("hybrid", "bm25", "vector"):
        with pytest.raises(CodeSightError) as exc:
            cs.search("haversine", mode=mode, glob=glob)
        assert exc.value.exit_code == 2 and "invalid path filter" in str(exc.value)


def test_the_cli_says_so_in_one_line(repo: Path, tmp_path: Path) -> None:
    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"))
    subprocess.run(
        [sys.executable, "-m", "codesight_tui", "index", "--no-embed", str(repo)],
        env=env,
        check=True,
        capture_output=True,
    )
    r = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "search", "geo", "--path", str(repo), "--glob", "!", "--mode", "bm25"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "invalid path filter" in r.stderr and "Traceback" not in r.stderr


_QUERY = st.text(st.characters(blacklist_categories=()), max_size=200) | st.sampled_from(
    ['"', "a NEAR b", "path:src", "* OR -", "(((", "NOT", "^x", 'col : "v"', "\x00", "\udcff", "🙂" * 50]
)


@hsettings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_QUERY, mode=st.sampled_from(["hybrid", "bm25", "vector"]))
def test_any_query_string_is_safe(cs: CodeSight, query: str, mode: Mode) -> None:
    hits = cs.search(query, mode=mode, top_k=5)
    assert len(hits) <= 5 and all(h.start_line <= h.end_line for h in hits)


def test_a_huge_query_is_cut_not_ground_through(cs: CodeSight) -> None:
    # 130,000 characters of one "identifier" took 159 s of splitting before; now it is cut at
    # MAX_QUERY_CHARS and answered like any other query.
    from codesight_tui.core.engine import MAX_QUERY_CHARS

    assert cs.search("F" * 130_000, mode="bm25") == []
    assert cs.search("haversine " + "x" * (MAX_QUERY_CHARS * 3), mode="bm25")[0].path == "src/geo.py"


def test_fifos_are_counted_never_opened_and_utf16_is_text(tmp_path: Path, settings: Settings) -> None:
    root = tmp_path / "r"
    root.mkdir()
    os.mkfifo(root / "pipe.py")  # opening it for reading would block the walk forever
    (root / "win.py").write_bytes("def greet_from_windows():\r\n    return 'hi'\r\n".encode("utf-16"))
    c = CodeSight(root, settings=settings)
    report = c.index(embed=False)
    assert report.skipped["special_file"] == 1
    (hit,) = c.search("greet_from_windows", mode="bm25", top_k=1)
    assert hit.path == "win.py" and hit.start_line == 1 and "return 'hi'" in hit.content


def test_vectors_of_removed_chunks_go_without_the_model(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    (repo / "src" / "geo.py").unlink()
    report = c.index(embed=False)
    assert report.chunks_removed
    ids = set(c.storage.vectors.ids())
    assert ids == c.store.embedded_ids()  # no vector is left for a chunk that is gone


def test_plain_output_never_passes_escape_sequences_through(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "evil.py").write_text("def paint():\n    return '\x1b]0;pwned\x07\x1b[31mred'\n")
    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"))
    r = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "search", "paint", "--path", str(root), "--mode", "bm25"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "paint" in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\x1b" not in r.stderr


async def test_notices_show_paths_as_text_not_markup(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    from codesight_tui.tui.app import CodeSightApp

    app = CodeSightApp(
        repo, engine=CodeSight(repo, settings=settings, embedder=hash_embedder), watch=False, auto_index=False
    )
    async with app.run_test() as pilot:
        app.notify("cannot read src/[/].py: [bold]x")  # shown as markup, it raised a MarkupError
        await pilot.pause(0.1)
        (note,) = [n for n in app._notifications if "[/].py" in n.message]
        assert note.markup is False


def test_a_bad_page_inside_the_index_is_reported_then_repaired(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Issue 22, fault 8: damage in the middle of index.db made every search fail until --force.
    for i in range(60):
        (repo / f"gen_{i}.py").write_text(
            "".join(f"def f{i}_{j}(x):\n    return x * {j}  # words\n\n" for j in range(40))
        )
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    c.close()
    size = c.storage.db_path.stat().st_size
    with open(c.storage.db_path, "r+b") as fh:  # a third of the pages, in the middle
        fh.seek(size // 3)
        fh.write(b"\xde\xad" * (size // 6))
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    errors = []
    for q in ("f3_4", "words", "return x", "haversine", "f59_39"):
        try:
            c.search(q, mode="bm25")
        except CodeSightError as exc:
            errors.append(str(exc))
    assert errors and all("damaged" in e and "codesight index" in e for e in errors)
    report = c.index()
    assert any("damaged" in n and "rebuilt" in n for n in report.warnings)
    assert report.chunks > 300 and c.search("f3_4", mode="bm25")[0].path == "gen_3.py"
    again = c.index()  # rebuilt once, not on every run
    assert not any("rebuilt" in n for n in again.warnings)


@pytest.mark.parametrize("damage", ["data files deleted", "versions deleted"])
def test_a_damaged_vector_store_falls_back_to_bm25_then_is_rebuilt(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, damage: str
) -> None:
    # Issue 22, fault 9: deleted data files gave RuntimeError tracebacks, lost manifests an empty
    # vector search, and `index` repaired neither.
    import shutil

    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    table = c.index_dir / "vectors.lance" / "chunks.lance"
    c.close()
    if damage == "data files deleted":
        for f in (table / "data").iterdir():
            f.unlink()
    else:
        shutil.rmtree(table / "_versions")
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    if damage == "data files deleted":
        hits = c.search("haversine", mode="hybrid")
        assert hits and hits[0].path == "src/geo.py" and any("BM25" in n for n in hits.notices)
        with pytest.raises(CodeSightError, match="codesight index"):
            c.search("haversine", mode="vector")
    report = c.index()
    assert any("rebuilt it from the embedding cache" in n for n in report.warnings)
    assert report.embedded == 0 and report.cache_hits > 0  # nothing embedded again
    assert c.search("haversine", mode="vector")  # vector search answers again
    assert c.storage.vectors.count() >= c.store.counts()["vectors"]


def test_a_garbled_vector_manifest_no_search_reads_is_found_by_the_periodic_check(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Found by benchmarks/torture.py: a garbage manifest newer than the table's own was read by no
    # search (hybrid search answered from the static tier and BM25), so no run rebuilt it and vector
    # search failed for good. The periodic check reads every id back.
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    c.close()
    versions = c.index_dir / "vectors.lance" / "chunks.lance" / "_versions"
    newest = min(int(p.name.split(".")[0]) for p in versions.glob("*.manifest"))  # u64::MAX - version
    (versions / f"{newest - 3}.manifest").write_bytes(b"\x00garbage from the future" * 40)
    not_due = CodeSight(repo, settings=settings, embedder=hash_embedder)  # checked less than a day ago
    report = not_due.index()
    assert not any("rebuilt" in n for n in report.warnings)  # a run with nothing to do reads no vectors
    not_due.close()
    due = CodeSight(repo, settings=settings.model_copy(update={"integrity_check_hours": 0}), embedder=hash_embedder)
    report = due.index()
    assert any("rebuilt it from the embedding cache" in n for n in report.warnings), report.warnings
    assert report.embedded == 0 and report.cache_hits > 0
    assert due.search("haversine", mode="vector")
    report = due.index()
    assert not any("rebuilt" in n for n in report.warnings)  # once, not in a loop


def test_a_full_disk_is_one_clear_error_and_nothing_is_lost(repo: Path, settings: Settings) -> None:
    # Issue 22, fault 6: a full disk gave "cannot rollback - no transaction is active". SQLite's
    # page cap gives the same SQLITE_FULL a full file system does.
    c = CodeSight(repo, settings=settings)
    c.index(embed=False)
    before = [h.path for h in c.search("haversine", mode="bm25")]
    for i in range(40):
        (repo / f"more_{i}.py").write_text("".join(f"def g{i}_{j}(x):\n    return x + {j}\n\n" for j in range(50)))
    pages = c.store.conn.execute("PRAGMA page_count").fetchone()[0]
    c.store.conn.execute(f"PRAGMA max_page_count={pages + 2}")
    with pytest.raises(CodeSightError, match="no space left"):
        c.index(embed=False)
    assert [h.path for h in c.search("haversine", mode="bm25")] == before  # still searchable
    c.close()
    c = CodeSight(repo, settings=settings)  # space freed: the next run completes
    c.index(embed=False)
    assert c.search("g39_49", mode="bm25")[0].path == "more_39.py"


def test_a_search_failure_that_was_transient_does_not_cost_a_rebuild(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # A reader left on a version that compaction removed fails once; the table itself is fine,
    # so the next index run checks by reading it back and keeps it.
    c = CodeSight(repo, settings=settings, embedder=hash_embedder)
    c.index()
    c.storage.vectors_damaged_marker.touch()
    report = c.index()
    assert not any("rebuilt" in n for n in report.warnings) and not c.storage.vectors_damaged_marker.exists()


def _read_only(path: Path) -> Callable[[], object]:
    """Make ``path`` read-only for real: a read-only bind mount as root (root ignores permission
    bits), else the permission bits. Returns the undo function, or skips where neither works."""
    if os.geteuid() != 0:
        for d, _, files in os.walk(path):
            os.chmod(d, 0o555)
            for f in files:
                os.chmod(os.path.join(d, f), 0o444)

        def undo() -> None:
            for d, _, _ in os.walk(path):
                os.chmod(d, 0o755)

        return undo
    p = str(path)
    if subprocess.run(["mount", "--bind", p, p], capture_output=True).returncode != 0:
        pytest.skip("cannot mount here (root without CAP_SYS_ADMIN)")
    if subprocess.run(["mount", "-o", "remount,bind,ro", p, p], capture_output=True).returncode != 0:
        subprocess.run(["umount", p])
        pytest.skip("cannot remount read-only here")
    return lambda: subprocess.run(["umount", p], check=True)


def test_a_read_only_index_can_still_be_searched(repo: Path, tmp_path: Path) -> None:
    # Fault 4: with the data directory on a read-only mount, status and search failed with
    # "unable to open database file" (WAL needs a -shm file there) and a vector read tried to
    # create the vector directory.
    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"), CODESIGHT_CACHE_DIR=str(tmp_path / "cache"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", *args], capture_output=True, text=True, env=env, timeout=300
        )

    assert run("index", str(repo), "--no-embed").returncode == 0
    undo = [_read_only(tmp_path / "data"), _read_only(tmp_path / "cache") if (tmp_path / "cache").exists() else None]
    try:
        r = run("status", str(repo), "--json")
        assert r.returncode == 0, r.stderr
        r = run("search", "haversine", "--path", str(repo), "--mode", "bm25", "--json")
        assert r.returncode == 0 and "src/geo.py" in r.stdout, r.stderr
        assert "read-only" in r.stderr and "Traceback" not in r.stderr
        for mode in ("hybrid", "vector"):  # no vectors were written: BM25 answers, nothing raises
            r = run("search", "haversine", "--path", str(repo), "--mode", mode)
            assert "Traceback" not in r.stderr and r.returncode in (0, 1), r.stderr
        r = run("index", str(repo), "--no-embed")
        assert r.returncode == 2 and "read-only" in r.stderr and "Traceback" not in r.stderr
    finally:
        for u in undo:
            if u:
                u()


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out |= {int(x) for x in fh.read().split()}
    except OSError:
        pass
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "zombie" not in fh.read().lower()
    except OSError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="worker processes need 2 cores")
def test_kill_9_during_chunking_leaves_no_worker_behind(tmp_path: Path) -> None:
    # Fault 13: a kill -9 during chunking left two worker processes and the resource tracker
    # alive, still there after 120 s.
    import signal
    import time

    root = tmp_path / "big"
    for d in range(40):
        (root / f"pkg{d}").mkdir(parents=True)
        for f in range(60):
            (root / f"pkg{d}" / f"m{f}.py").write_text(
                "".join(f"def fn_{d}_{f}_{k}(x):\n    return x * {k}\n\n\n" for k in range(40))
            )
    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"), CODESIGHT_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "index", str(root), "--no-embed", "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kids: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        kids |= _children(proc.pid)
        if kids:  # killed while the workers are still importing: the window that left them behind
            break
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.skip("the index finished before its workers could be seen")
    time.sleep(0.05)
    kids |= _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)], "orphans left behind"


def test_status_lists_skips_and_says_when_it_rebuilt(tmp_path: Path) -> None:
    # Fault 14: `status --json` listed no skips; `status` rebuilt a corrupt index silently.
    import json

    root = tmp_path / "r"
    root.mkdir()
    (root / "ok.py").write_text("def router():\n    return 1\n")
    (root / "blob.py").write_bytes(b"\x00\x01binary" * 100)
    (root / "big.py").write_text("x = 1\n" * 400_000)
    os.mkfifo(root / "pipe.py")
    with open(os.fsencode(root) + b"/bad\xff.py", "wb") as fh:
        fh.write(b"x = 1\n")
    env = dict(os.environ, CODESIGHT_DATA_DIR=str(tmp_path / "data"), CODESIGHT_CACHE_DIR=str(tmp_path / "cache"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", *args], capture_output=True, text=True, env=env, timeout=300
        )

    (root / "logo.png").write_bytes(b"\x89PNG\r\n" + bytes(range(256)))  # binary by its name: never read
    # Issue 35, item 7: `index` counted the file binary by its name and `status` left it out.
    report = json.loads(run("index", str(root), "--no-embed", "--json").stdout)
    for n in range(2):  # the second time from what the first run remembered
        st = json.loads(run("status", str(root), "--json").stdout)
        assert st["skipped"]["binary"] == 2 and st["skipped"]["non_utf8_name"] == 1
        assert sum(st["skipped"].values()) == 5, st["skipped"]  # + the big file and the FIFO
        if n == 0:
            assert report["skipped"] == st["skipped"]  # the run that met them all counts them alike
        assert run("index", str(root), "--no-embed").returncode == 0
    assert "skipped" in run("status", str(root)).stdout
    db = next((tmp_path / "data").glob("*/index.db"))
    db.write_bytes(b"this is not a database" * 100)
    r = run("status", str(root), "--json")
    assert r.returncode == 0 and "rebuilt" in r.stderr and "Traceback" not in r.stderr


def test_damage_no_query_touches_is_found_by_the_periodic_check(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Found by benchmarks/torture.py: garbage in the middle of index.db that no search reads went
    # unnoticed; searches and index runs all succeeded on a damaged file. Every run over the whole
    # tree checks the file (issue 34); a watcher's batches once every integrity_check_hours.
    import sqlite3

    root = tmp_path / "r"
    root.mkdir()
    for i in range(150):
        (root / f"m{i}.py").write_text("".join(f"def f_{i}_{k}(x):\n    return x + {k}\n\n\n" for k in range(30)))
    c = CodeSight(root, settings=settings, embedder=hash_embedder)
    c.index()
    c.close()
    db = next(settings.data_dir.glob("*/index.db"))
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # A page in the middle of the chunks' rows: no query reads it (the index run's probe reads the
    # first and last rows), where the middle of the file may be a table a probe does read.
    leaves = [p for (p,) in con.execute("SELECT pageno FROM dbstat WHERE name = 'chunks' AND pagetype = 'leaf'")]
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    raw = bytearray(db.read_bytes())
    at = (sorted(leaves)[len(leaves) // 2] - 1) * page_size
    raw[at : at + page_size] = (bytes(range(256)) * (page_size // 256 + 1))[:page_size]
    db.write_bytes(bytes(raw))
    daily = CodeSight(root, settings=settings, embedder=hash_embedder)
    report = daily.index(paths=["m0.py"])  # a watcher's batch, checked less than a day ago: not yet
    assert not any("integrity" in n for n in report.warnings)
    daily.close()
    full = CodeSight(root, settings=settings, embedder=hash_embedder)
    report = full.index()  # a run over the whole tree: always
    assert any("integrity check" in n and "rebuilt" in n for n in report.warnings), report.warnings
    assert report.embedded == 0 and report.vectors_pending == 0  # vectors came from the cache
    assert full.store.quick_check() is None
    again = CodeSight(root, settings=settings.model_copy(update={"integrity_check_hours": 0}), embedder=hash_embedder)
    report = again.index()
    assert not any("rebuilt" in n for n in report.warnings)  # once, not in a loop
