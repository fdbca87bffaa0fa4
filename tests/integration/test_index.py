"""Indexing against real SQLite and LanceDB, with the deterministic embedder."""

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.errors import IndexBusyError
from codesight_tui.core.ingest.chunker import doc_text


def lance_ids(cs: CodeSight) -> list[int]:
    return sorted(cs.storage.vectors.ids())


def sqlite_ids(cs: CodeSight, embedded: bool | None = None) -> list[int]:
    sql = "SELECT id FROM chunks" + ("" if embedded is None else f" WHERE embedded={int(embedded)}")
    return sorted(i for (i,) in cs.store.conn.execute(sql))


def test_full_index_then_noop_embeds_nothing(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    r1 = cs.index()
    assert r1.files >= 8 and r1.chunks >= 8
    assert r1.embedded == r1.chunks and r1.vectors_pending == 0
    assert r1.skipped["too_large"] == 1 and r1.skipped["binary"] == 1
    assert lance_ids(cs) == sqlite_ids(cs) == sqlite_ids(cs, embedded=True)
    hash_embedder.calls.clear()
    r2 = cs.index()
    assert r2.files_changed == 0 and r2.embedded == 0 and hash_embedder.calls == []


def test_one_file_changed_reembeds_only_its_new_chunks(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    before = sqlite_ids(cs)
    hash_embedder.calls.clear()
    p = repo / "src" / "auth.py"
    p.write_text(p.read_text() + "\n\ndef rotate_keys(store):\n    return store.rotate()\n")
    r = cs.index()
    assert r.files_changed == 1
    assert r.embedded == len(hash_embedder.calls) >= 1
    assert all("rotate_keys" in t or "auth.py" in t for t in hash_embedder.calls)
    after = sqlite_ids(cs)
    assert len(set(before) - set(after)) == r.chunks_removed
    assert lance_ids(cs) == after


def test_moved_code_is_not_reembedded(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    body = "".join(
        f"def handler_{i}(request):\n"
        + "".join(f"    value_{j} = request.get('k{j}') or {i * j}\n" for j in range(14))
        + "    return value_1\n\n\n"
        for i in range(12)
    )
    p = repo / "src" / "handlers.py"
    p.write_text(body)
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    line_before = cs.search("handler_7", mode="bm25")[0].start_line
    hash_embedder.calls.clear()
    p.write_text(
        "def brand_new_entry_point(request):\n" + "".join(f"    step_{j}(request)\n" for j in range(15)) + "\n\n" + body
    )
    r = cs.index()
    assert r.files_changed == 1
    assert hash_embedder.calls and all("brand_new_entry_point" in t for t in hash_embedder.calls)
    assert cs.search("handler_7", mode="bm25")[0].start_line == line_before + 18  # lines follow the move


def test_fts_rows_follow_every_change_and_old_insert_trigger_is_dropped(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    c = cs.store.conn
    # An index made by an older version fed FTS5 through a per-row trigger; with both, every row
    # would be indexed twice.
    c.execute(
        "CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN INSERT INTO chunks_fts(rowid, path, scope,"
        " content, terms) VALUES (new.id, new.path, new.scope, new.content, new.terms); END"
    )
    cs.store.close()
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    assert cs.store.conn.execute("SELECT count(*) FROM sqlite_master WHERE name='chunks_ai'").fetchone()[0] == 0
    p = repo / "src" / "geo.py"
    p.write_text(p.read_text() + "\n\ndef zebra_crossing_latitude():\n    return 42\n")
    (repo / "src" / "fresh.py").write_text("def quokka_habitat():\n    return 'rottnest'\n")
    cs.index()
    c = cs.store.conn
    c.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")  # raises on any mismatch
    (n,) = c.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'quokka'").fetchone()
    assert n == 1 and cs.search("zebra_crossing_latitude", mode="bm25")[0].path == "src/geo.py"


def test_touch_without_change_rewrites_nothing(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    import os

    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    ids = sqlite_ids(cs)
    os.utime(repo / "src" / "geo.py", ns=(1, 1))
    r = cs.index()
    assert r.files_changed == 1 and r.chunks_added == 0 and r.chunks_removed == 0
    assert sqlite_ids(cs) == ids


def test_deleted_and_newly_ignored_files_leave_both_stores(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    (repo / "src" / "geo.py").unlink()
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "server/\n")
    r = cs.index()
    assert r.files_deleted == 2
    paths = {p for (p,) in cs.store.conn.execute("SELECT DISTINCT path FROM chunks")}
    assert "src/geo.py" not in paths and "server/main.go" not in paths
    assert lance_ids(cs) == sqlite_ids(cs)
    assert cs.search("haversine", mode="bm25") == []


def test_model_change_rebuilds_vectors_only(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    ids = sqlite_ids(cs)
    other = HashEmbedder(dim=32, name="test/other-model")
    cs2 = CodeSight(repo, settings=settings, embedder=other)
    r = cs2.index()
    assert r.files_changed == 0 and r.embedded == len(ids)  # lexical untouched, vectors redone
    assert sqlite_ids(cs2) == ids and lance_ids(cs2) == ids
    assert cs2.store.get_meta("model") == "test/other-model" and cs2.store.get_meta("dim") == "32"


def test_interrupted_embedding_resumes_without_duplicates(repo: Path, settings: Settings) -> None:
    class Boom(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.batches = 0

        def encode(self, texts: list[str]) -> np.ndarray:
            self.batches += 1
            if self.batches == 2:
                raise KeyboardInterrupt
            return super().encode(texts)

    for i in range(40):  # enough chunks for several embedding batches
        (repo / f"mod_{i}.py").write_text("".join(f"def f_{i}_{j}(x):\n    return x * {j}\n\n\n" for j in range(40)))
    cs = CodeSight(repo, settings=settings, embedder=Boom())
    with pytest.raises(KeyboardInterrupt):
        cs.index()
    done = len(sqlite_ids(cs, embedded=True))
    assert 0 < done < len(sqlite_ids(cs))
    # Simulate a kill between the LanceDB append and the SQLite commit: an orphan vector.
    cs.storage.vectors.add([sqlite_ids(cs, embedded=False)[0]], ["python"], HashEmbedder().encode(["x"]))
    cs2 = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    r = cs2.index()
    assert r.files_changed == 0
    assert r.embedded + r.cache_hits == len(sqlite_ids(cs2)) - done
    ids = lance_ids(cs2)
    assert len(ids) == len(set(ids)) == len(sqlite_ids(cs2))  # no duplicate rows


def test_cancel_event_stops_between_batches(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cancel = threading.Event()
    cancel.set()
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    r = cs.index(cancel=cancel)
    assert r.cancelled and hash_embedder.calls == []


def test_overlapped_embedding_writes_each_chunk_once_and_resumes(repo: Path, settings: Settings) -> None:
    """The GPU path: batch n+1 is embedded in a second thread while batch n is written. Rows in a
    batch still being embedded must not be read again as pending, nothing may be embedded twice,
    and a cancel keeps every written batch."""
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.index.embedding import index_vectors

    class Threaded(HashEmbedder):
        def __init__(self, cancel_after: int | None = None, cancel: threading.Event | None = None) -> None:
            super().__init__()
            self.threads: set[str] = set()
            self.batches = 0
            self.cancel_after, self.cancel = cancel_after, cancel

        def encode(self, texts: list[str]) -> np.ndarray:
            self.threads.add(threading.current_thread().name)
            self.batches += 1
            if self.cancel is not None and self.batches == self.cancel_after:
                self.cancel.set()
            return super().encode(texts)

    for i in range(12):
        (repo / f"mod_{i}.py").write_text("".join(f"def g_{i}_{j}(x):\n    return x - {j}\n\n\n" for j in range(30)))
    cs = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    cs.index(embed=False)
    total = len(sqlite_ids(cs))
    cache = EmbeddingCache(settings.cache_dir, HashEmbedder.name, 64)

    cancel = threading.Event()
    first = Threaded(cancel_after=3, cancel=cancel)
    r1 = index_vectors(cs.store, cs.storage.vectors, first, cache, batch=8, overlap=True, cancel=cancel)
    assert r1.cancelled and first.threads and all(t.startswith("codesight-embed") for t in first.threads)
    written = sqlite_ids(cs, embedded=True)
    assert 0 < len(written) < total and lance_ids(cs) == written  # every batch embedded was kept

    second = Threaded()
    r2 = index_vectors(cs.store, cs.storage.vectors, second, cache, batch=8, overlap=True)
    assert not r2.cancelled and r2.vectors_pending == 0
    ids = lance_ids(cs)
    assert ids == sqlite_ids(cs) and len(ids) == len(set(ids)) == total  # no duplicate rows
    assert len(first.calls) + len(second.calls) == len(set(first.calls) | set(second.calls))  # none twice
    assert r2.embedded + r2.cache_hits == total - len(written)


def test_shared_cache_spares_second_worktree(tmp_path: Path, settings: Settings) -> None:
    from conftest import build_repo

    a = build_repo(tmp_path / "a")
    b = build_repo(tmp_path / "b")
    e1 = HashEmbedder()
    CodeSight(a, settings=settings, embedder=e1).index()
    e2 = HashEmbedder()
    r = CodeSight(b, settings=settings, embedder=e2).index()
    assert r.chunks > 0 and e2.calls == [] and r.cache_hits == r.chunks


def test_second_writer_gets_busy_error(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    from filelock import FileLock

    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    lock = FileLock(str(cs.index_dir / "write.lock"))
    with lock:
        with pytest.raises(IndexBusyError):
            CodeSight(repo, settings=settings, embedder=hash_embedder).index()
        # readers are not blocked by the writer
        assert CodeSight(repo, settings=settings, embedder=hash_embedder).search("haversine", mode="bm25")


def corrupted_index(repo: Path, settings: Settings, embedder: HashEmbedder) -> CodeSight:
    """A fresh engine on an index whose database file was overwritten with garbage."""
    cs = CodeSight(repo, settings=settings, embedder=embedder)
    cs.index()
    cs.close()
    for suffix in ("-wal", "-shm"):
        (cs.index_dir / f"index.db{suffix}").unlink(missing_ok=True)
    (cs.index_dir / "index.db").write_bytes(b"this is not a database" * 100)
    return CodeSight(repo, settings=settings, embedder=embedder)


def test_corrupt_index_is_detected_and_rebuilt(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs2 = corrupted_index(repo, settings, hash_embedder)
    r = cs2.index()
    assert any("rebuilt" in n for n in r.warnings)
    assert r.chunks > 0 and cs2.search("haversine", mode="bm25")


def test_a_kill_while_the_schema_is_created_leaves_no_half_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema goes in as one transaction: a process stopped part-way (here a statement that
    fails after the others have run) leaves a database with no tables, which the next open fills,
    never one with some tables and not others (what a reader would fail on)."""
    from codesight_tui.core.store import store as store_mod

    db = tmp_path / "index.db"
    real = store_mod._SCHEMA
    monkeypatch.setattr(store_mod, "_SCHEMA", real + "\nCREATE TABLE cut_short (;\n")
    with pytest.raises(sqlite3.Error):
        store_mod.Store(db)
    c = sqlite3.connect(db)
    assert c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    c.close()
    monkeypatch.setattr(store_mod, "_SCHEMA", real)
    s = store_mod.Store(db)
    assert s.get_meta("schema_version") == store_mod.SCHEMA_VERSION
    assert s.file_states() == {}
    s.close()


def test_index_dir_lives_outside_the_repo(repo: Path, settings: Settings, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    assert repo not in cs.index_dir.parents
    assert cs.index_dir.parent == settings.data_dir
    assert len(cs.index_dir.name) == 16


def test_large_vector_tables_get_an_ann_index(tmp_path: Path) -> None:
    """Above the threshold the table gets an IVF_PQ index; search still finds each vector's
    own row first, and rows added later are found too (LanceDB scans unindexed rows)."""
    import numpy as np

    from codesight_tui.core.store.vectors import VectorStore

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(1200, 32)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vs = VectorStore(tmp_path / "v.lance", ann_min_rows=1000)
    vs.add(list(range(600)), ["python"] * 600, vecs[:600])
    assert not vs.ensure_ann() and not vs.has_ann()  # below the threshold: exact search
    vs.add(list(range(600, 1100)), ["python"] * 500, vecs[600:1100])
    assert vs.ensure_ann() and vs.has_ann() and not vs.ensure_ann()
    hits = sum(vs.nearest(vecs[i], 5)[0][0] == i for i in range(0, 1100, 50))
    assert hits >= 20  # of 22
    vs.add(list(range(1100, 1200)), ["go"] * 100, vecs[1100:])
    assert vs.nearest(vecs[1150], 3)[0][0] == 1150
    assert vs.nearest(vecs[1150], 3, language="go")[0][0] == 1150
    assert VectorStore(tmp_path / "v.lance").has_ann()  # a fresh reader sees the index


def test_lexical_phase_in_worker_processes_matches_the_thread_path(
    repo: Path, tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Big change sets are chunked in spawned worker processes (the CLI turns this on); the
    rows they produce are exactly those of the in-process path."""
    from codesight_tui.core.index import indexer

    for i in range(40):
        (repo / "src" / f"mod_{i}.py").write_text(f"def handler_{i}(event):\n    return event * {i}\n")
    monkeypatch.setattr(indexer, "LEXICAL_BATCH_FILES", 8)
    monkeypatch.setattr(indexer, "EARLY_WORKERS_FILES", 32)
    multi = len(os.sched_getaffinity(0)) > 1
    assert indexer._worker_count(6, True) >= (2 if multi else 0)
    events: list[str] = []
    start = indexer._Workers.start_processes

    def started(self: indexer._Workers, n: int) -> None:
        events.append(f"workers {n}")
        start(self, n)

    monkeypatch.setattr(indexer._Workers, "start_processes", started)
    rows = {}
    for processes in (True, False):
        s = settings.model_copy(update={"data_dir": tmp_path / f"data-{processes}"})
        cs = CodeSight(repo, settings=s, embedder=hash_embedder, lexical_processes=processes)
        report = cs.index(embed=False, progress=lambda p: events.append(p.phase))
        assert report.files_changed >= 48 and not report.cancelled
        if processes and multi:  # a first index of a big tree starts its workers during the walk
            assert events.index("workers 2") < events.index("scan") and events.count("workers 2") == 1
        rows[processes] = cs.store.conn.execute(
            "SELECT path, start_line, end_line, scope, content, hash FROM chunks ORDER BY path, start_line"
        ).fetchall()
        assert cs.search("handler_17", mode="bm25")[0].path == "src/mod_17.py"
    assert rows[True] == rows[False]


def test_doc_views_are_a_second_row_that_search_folds_into_its_chunk(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    repo = tmp_path / "r"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "text.py").write_text(
        "def detect_indentation(plain):\n"
        '    """Guess how many spaces each nesting level uses."""\n'
        "    found = {len(m) for m in re.findall(r'^ *', plain, flags=re.M)}\n"
        "    return reduce(gcd, sorted(found)) or 1\n"
    )
    (repo / "pkg" / "ops.py").write_text("def add(a, b):\n    return a + b\n")
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    report = cs.index()
    rows = cs.store.get_chunks(sqlite_ids(cs))
    documented = [i for i, r in rows.items() if doc_text(r.path, r.scope, r.content, r.language)]
    assert len(documented) == 1 and len(rows) == 2
    assert report.embedded == 2 and report.doc_views == 1  # chunks count once, doc views apart
    table = cs.storage.vectors.table().to_arrow()
    assert sorted(table.column("id").to_pylist()) == sorted([-documented[0], *rows])
    assert lance_ids(cs) == sqlite_ids(cs)  # chunk ids only
    # The query's words are all in the doc view: it is the nearer row, and the chunk comes back
    # once, at that row's distance.
    q = hash_embedder.encode_query("guess how many spaces each nesting level uses")
    vec = dict(zip(table.column("id").to_pylist(), table.column("vector").to_pylist(), strict=False))
    doc_d, text_d = (1 - float(np.dot(q, vec[i])) for i in (-documented[0], documented[0]))
    assert doc_d < text_d
    hits = cs.storage.vectors.nearest(q, 5)
    assert [i for i, _ in hits].count(documented[0]) == 1 and all(i > 0 for i, _ in hits)
    assert hits[0][0] == documented[0] and hits[0][1] == pytest.approx(doc_d, abs=1e-5)
    assert cs.search("spaces nesting level", mode="vector", top_k=1)[0].scope == "def detect_indentation"
    (repo / "pkg" / "text.py").unlink()
    cs.index()
    assert cs.storage.vectors.count() == 1 and lance_ids(cs) == sqlite_ids(cs)  # both rows of the removed chunk went


def test_a_doc_view_two_chunks_share_is_embedded_once_and_counted_once(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    """A redefinition with the same signature and docstring (same file, same scope) has the same doc
    view as the first: one text to embed, while both chunks' own texts are embedded."""
    body = "\n".join(f"    total = total + value_{i} * weight_{i} - offset_{i}" for i in range(5))
    fn = 'def parse(text):\n    """Parse the text into fields."""\n    total = 0\n{}\n    return total\n'
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "p.py").write_text(fn.format(body) + "\n\n" + fn.format(body.replace("offset", "shift")))
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    report = cs.index()
    assert report.chunks == 2 and report.embedded == 2 and report.doc_views == 1
    assert len(hash_embedder.calls) == 3


def test_worker_processes_start_when_stderr_has_no_file_descriptor(tmp_path: Path) -> None:
    """Under Textual, sys.stderr is a capture object without a file descriptor, which made
    multiprocessing's resource tracker (started with our stderr's fd) fail to start; the TUI
    now chunks big first indexes in worker processes too. A fresh interpreter, since the tracker
    starts once per process."""
    import subprocess
    import sys

    repo = tmp_path / "r"
    repo.mkdir()
    for i in range(40):
        (repo / f"m{i}.py").write_text(f"def handler_{i}(event):\n    return event * {i}\n")
    script = (
        "import io, sys\n"
        "from pathlib import Path\n"
        "from codesight_tui.core.index import indexer\n"
        "from codesight_tui.core.ingest.chunker import Chunker\n"
        "from codesight_tui.core.store.store import Store\n"
        "from codesight_tui.core.ingest.tokens import TokenCounter, resolve_model\n"
        "if __name__ == '__main__':\n"
        "    indexer.LEXICAL_BATCH_FILES = 8\n"
        "    class Capture(io.StringIO):  # what Textual leaves in place while the app runs\n"
        "        def fileno(self):\n"
        "            return -1\n"
        "    sys.stderr = Capture()\n"
        "    started = []\n"
        "    start = indexer._Workers.start_processes\n"
        "    indexer._Workers.start_processes = lambda self, n: (started.append(n), start(self, n))\n"
        "    info = resolve_model('minilm')\n"
        f"    store = Store(Path({str(tmp_path / 'i.db')!r}))\n"
        f"    r = indexer.index_lexical(Path({str(repo)!r}), store, Chunker(TokenCounter(info.tokenizer_file)),\n"
        "                              max_file_size=10**6, exclude=[], processes=True)\n"
        "    print(r.files_changed, r.chunks, started)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    files, chunks, started = out.stdout.split(maxsplit=2)
    assert files == "40" and chunks == "40"
    if len(os.sched_getaffinity(0)) > 1:
        assert started.strip() == "[2]"


def test_embed_phase_is_announced_before_the_model_loads(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first "embed" event comes as soon as the lexical phase has committed, before the
    model is loaded (seconds, in a fresh process), so the TUI says BM25 is ready at once."""
    cs = CodeSight(repo, settings=settings)
    events: list[object] = []

    def loaded() -> HashEmbedder:
        events.append("model loaded")
        return hash_embedder

    monkeypatch.setattr(cs.models, "embedder", loaded)
    report = cs.index(progress=lambda p: events.append((p.phase, p.done, cs.store.counts()["chunks"])))
    first = next(i for i, e in enumerate(events) if isinstance(e, tuple) and e[0] == "embed")
    assert events[first] == ("embed", 0, report.chunks) and events.index("model loaded") > first


def test_small_edits_do_not_pile_up_vector_versions(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 22, fault 12: 200 one-line edits, each followed by an index run, took the vector table
    # from 15 to 753 versions and 5.3 MB to 330 MB: old versions went only in runs that embedded,
    # and only after 5 minutes. Every run that changes the table (deletions included) now compacts
    # it and drops versions older than KEEP_VERSIONS_S (1 s here, so that the test waits little).
    import time

    from codesight_tui.core.store import vectors as vectors_module

    monkeypatch.setattr(vectors_module, "KEEP_VERSIONS_S", 1)
    monkeypatch.setattr(vectors_module, "COMPACT_FRAGMENTS", 4)
    monkeypatch.setattr(vectors_module, "COMPACT_VERSIONS", 8)
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    geo = repo / "src" / "geo.py"
    base = geo.read_text()
    versions, sizes = [], []
    for i in range(12):
        geo.write_text(base + f"\n\ndef edit_{i}():\n    return {i}\n")
        cs.index()
        versions.append(cs.storage.vectors.version_count())
        sizes.append(cs.storage.vectors.size_bytes())
        time.sleep(0.3)
    assert max(versions[4:]) <= 20, versions  # a 5-minute window kept every one: 3 or more per edit
    assert sizes[-1] <= 2 * sizes[0] + 100_000, sizes
    # files removed in lexical-only runs: their vectors are deleted, and those versions go too
    time.sleep(1.1)
    for f in ("src/auth.py", "src/config_loader.py", "web/client.js"):
        (repo / f).unlink()
        cs.index(embed=False)
        time.sleep(1.1)
    assert cs.storage.vectors.version_count() <= 16
    hits = cs.search("edit_11", mode="bm25")
    assert hits and hits[0].path == "src/geo.py"


def test_sqlite_file_shrinks_after_most_of_it_is_deleted(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Issue 22, item 8: the SQLite file is vacuumed when it is mostly free pages.
    root = tmp_path / "r"
    (root / "gen").mkdir(parents=True)
    for i in range(300):
        (root / "gen" / f"m{i}.py").write_text(
            "".join(f"def f_{i}_{k}(x):\n    return x + {k}  # {'pad ' * 20}\n\n\n" for k in range(120))
        )
    (root / "keep.py").write_text("def keep():\n    return 1\n")
    cs = CodeSight(root, settings=settings, embedder=hash_embedder)
    cs.index(embed=False)
    before = cs.store.size_bytes()
    assert before > 8 << 20
    for f in (root / "gen").iterdir():
        f.unlink()
    cs.index(embed=False)
    after = cs.store.size_bytes()
    assert after < before / 4, (before, after)
    assert cs.search("keep", mode="bm25")[0].path == "keep.py"


def test_an_indexer_that_held_an_old_table_version_writes_no_duplicate_vectors(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    # Found by benchmarks/torture.py (concurrency): two long-lived indexers took turns; the second
    # read the vector table at the version it had opened earlier, took the other's new vectors for
    # missing, and embedded those chunks again: 266 chunks ended up with two vectors.
    from collections import Counter

    from codesight_tui.core.store.vectors import VectorStore

    b = CodeSight(repo, settings=settings, embedder=hash_embedder)
    b.index()
    a = CodeSight(repo, settings=settings, embedder=hash_embedder)
    (repo / "src" / "fresh_a.py").write_text("def made_while_b_waited():\n    return 1\n")
    a.index()
    (repo / "src" / "fresh_b.py").write_text("def made_later():\n    return 2\n")
    b.index()
    table = VectorStore(b.storage.vectors.directory).table()
    ids = Counter(table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())
    assert not [i for i, n in ids.items() if n > 1]
    assert set(i for i in ids if i > 0) == b.store.embedded_ids()


def test_a_row_whose_text_is_no_longer_utf8_is_damage_and_the_next_index_rebuilds(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    """A garbage page can leave a row whose text SQLite returns as invalid UTF-8 (found by the
    torture harness): search says in one line that the index is damaged, and `index` rebuilds."""
    from codesight_tui.core.errors import CodeSightError

    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    cs.index()
    with cs.store.transaction():
        cs.store.conn.execute(
            "UPDATE chunks SET content = CAST(x'7061737377c328ff0a0a' AS TEXT) WHERE path = 'src/auth.py'"
        )
    with pytest.raises(CodeSightError) as err:
        cs.search("hash_password", mode="bm25")
    assert "is damaged (a row's text is unreadable)" in str(err.value) and "\n" not in str(err.value)
    report = cs.index()
    assert any("damaged" in w for w in report.warnings)
    assert cs.search("hash_password", mode="bm25")[0].path == "src/auth.py"
    cs.close()


def test_a_status_call_never_takes_the_notice_a_search_should_show(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    """Notices are told once per reader: MCP runs status and search in parallel, and whichever came
    first used to empty the one shared list."""
    cs2 = corrupted_index(repo, settings, hash_embedder)
    said = [n for n in cs2.status()["notices"] if "rebuilt" in n]
    assert said  # status tells it...
    hits = cs2.search("haversine", mode="bm25")
    assert said[0] in hits.notices  # ...and so does the search that comes after
    assert not cs2.search("haversine", mode="bm25").notices  # each reader once
    assert said[0] not in cs2.status()["notices"]


def test_an_unreadable_file_is_not_changed_forever(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 48 item 27: a file no run can read (chmod 000 for a user; here open() refused) is
    skipped as unreadable, and status does not report it as added after every run."""

    locked = str(repo / "src" / "geo.py")
    real_open = os.open

    def refusing(path: Any, flags: int, *args: Any) -> int:
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing)
    cs = CodeSight(repo, settings=settings, embedder=hash_embedder)
    report = cs.index()
    assert report.skipped.get("unreadable") == 1
    assert cs.changed_files() == {"added": [], "modified": [], "deleted": []}
    assert cs.status()["changed"] == 0
    cs.index()
    assert cs.status()["changed"] == 0


def test_a_static_only_rebuild_keeps_the_full_vectors_the_cache_holds(
    repo: Path, settings: Settings, hash_embedder: HashEmbedder
) -> None:
    """Issue 48 item 28: `index --force --static-only` rebuilds without the full model, and the
    full model's vectors come back from the shared cache (no model work), not 0 of N."""
    probe = CodeSight(repo, settings=settings)
    embedder = HashEmbedder(name=probe.model_info.vectors_name)  # as the real model: its cache is the model's
    probe.close()
    cs = CodeSight(repo, settings=settings, embedder=embedder)
    cs.index()
    chunks = cs.status()["chunks"]
    assert cs.status()["vectors"] == chunks
    cs.close()
    cs = CodeSight(repo, settings=settings, embedder=embedder)
    embedder.calls.clear()
    cs.index(force=True, embed=False, static=True)
    assert cs.status()["vectors"] == chunks and cs.status()["pending"] == 0
    assert embedder.calls == []
    # What the cache lacks stays pending: a static-only run never loads or runs the full model.
    (repo / "src" / "fresh.py").write_text("def brand_new_function_nobody_embedded():\n    return 42\n")
    report = cs.index(embed=False, static=True)
    assert embedder.calls == [] and report.embedded == 0 and cs.status()["pending"] > 0
