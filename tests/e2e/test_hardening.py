"""Issue 34: secrets stay out of the index, what codesight writes is private, damage is found by the
index run, and hostile trees, files and back ends cost a skipped file, never the run. Each test
here failed on the code before the fix."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import HashEmbedder

from codesight_tui import CodeSight
from codesight_tui.core.errors import CodeSightError
from codesight_tui.core.ingest.chunker import Chunker
from codesight_tui.core.ingest.walker import walk
from codesight_tui.core.modes import Vectors
from codesight_tui.core.redact import flagged, redact, secret_name
from codesight_tui.core.store.watch import Batch
from codesight_tui.core.text import printable

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBk6Lw0cRm8Oq1zvdTDB7aMqQUMw0AUcx+f1XpIWp1G0QAAAJhH1vHyR9bx\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def _secret_repo(root: Path) -> Path:
    files = {
        ".env": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nDB_PASSWORD=hunter2hunter2\n",
        ".env.example": "DB_PASSWORD=\nAWS_SECRET_ACCESS_KEY=\n",
        "id_rsa": PRIVATE_KEY,
        "id_rsa.pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGTovDRxGbw6rXO91MMHtoypBQzDQBRzF5/VekhanUbR me@box\n",
        "credentials.json": json.dumps({"token": GITHUB_TOKEN, "user": "deploy"}),
        "deploy/certs/server.pem": PRIVATE_KEY,
        "src/billing.py": (
            "import stripe\n\n\ndef charge_customer(amount):\n"
            f'    stripe.api_key = "{STRIPE_KEY}"\n    return stripe.Charge.create(amount=amount)\n'
        ),
        "src/keys.py": f"# fixture\nDEPLOY_KEY = '''\n{PRIVATE_KEY}'''\n\n\ndef rotate_deploy_key():\n    return DEPLOY_KEY\n",
        "src/ok.py": "def harmless_function():\n    return 'nothing to see'\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / ".git").mkdir()
    return root


# --- 1. secrets ------------------------------------------------------------------------------


def test_secret_files_are_never_indexed_and_counted(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    root = _secret_repo(tmp_path / "repo")
    cs = CodeSight(root, embedder=hash_embedder)
    report = cs.index()
    paths = {p for (p,) in cs.store.conn.execute("SELECT path FROM files")}
    assert not paths & {".env", "id_rsa", "credentials.json", "deploy/certs/server.pem"}
    assert {".env.example", "id_rsa.pub", "src/billing.py", "src/ok.py"} <= paths
    assert report.skipped["secret"] == 4
    assert all("hunter2" not in h.content for h in cs.search("hunter2hunter2", mode="bm25"))
    st = cs.status()
    assert st["secrets"]["files_skipped"] == 4
    assert st["skipped"]["secret"] == 4


def test_keys_and_tokens_inside_files_are_masked_line_for_line(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    root = _secret_repo(tmp_path / "repo")
    cs = CodeSight(root, embedder=hash_embedder)
    report = cs.index()
    assert report.secrets_masked == 2
    rows = "\n".join(c for (c,) in cs.store.conn.execute("SELECT content FROM chunks"))
    for secret in (STRIPE_KEY, GITHUB_TOKEN, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "BEGIN OPENSSH"):
        assert secret not in rows
    assert all(STRIPE_KEY not in h.content for h in cs.search(STRIPE_KEY, mode="bm25"))
    # The rest of the file is still found, at its own lines.
    hit = cs.search("rotate_deploy_key", mode="bm25")[0]
    assert hit.path == "src/keys.py"
    assert (
        "def rotate_deploy_key" in (root / "src/keys.py").read_text().split("\n")[hit.start_line - 1 : hit.end_line][-2]
    )
    assert cs.search("charge_customer", mode="bm25")[0].path == "src/billing.py"
    st = cs.status()
    assert st["secrets"] == {"files_skipped": 4, "masked": 2, "files_masked": 2}


def test_the_secret_file_list_is_a_setting(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    root = _secret_repo(tmp_path / "repo")
    cs = CodeSight(root, embedder=hash_embedder, secret_files=["*.pem"])
    cs.index()
    paths = {p for (p,) in cs.store.conn.execute("SELECT path FROM files")}
    assert ".env" in paths and "deploy/certs/server.pem" not in paths
    # Even then, the key in id_rsa is masked by the content scan.
    assert "OPENSSH" not in "".join(c for (c,) in cs.store.conn.execute("SELECT content FROM chunks"))


def test_redact_knows_the_common_formats_and_leaves_code_alone() -> None:
    samples = {
        "AKIAIOSFODNN7EXAMPLE": "aws-access-key",
        GITHUB_TOKEN: "github-token",
        STRIPE_KEY: "stripe-key",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx": "slack-token",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv": "google-api-key",
        "npm_" + "a" * 36: "npm-token",
        "glpat-" + "x1Y2z3A4b5C6d7E8f9G0": "gitlab-token",
    }
    for token, kind in samples.items():
        text, n = redact(f"key = '{token}'\nnext line\n")
        assert n == 1 and f"[redacted {kind}]" in text and token not in text, token
        assert text.count("\n") == 2
    url, n = redact("db = 'postgres://admin:s3cr3tpass@db.internal:5432/app'")
    assert n == 1 and "s3cr3tpass" not in url and "admin:" in url
    for code in (
        "password = get_password()",
        "url = 'https://user:${PASSWORD}@host'",
        "hash = 'da39a3ee5e6b4b0d3255bfef95601890afd80709'",
        "self.secret_key = settings.SECRET_KEY",
        "ghp_short",
    ):
        assert redact(code) == (code, 0), code
    assert flagged(PRIVATE_KEY) and not flagged("BEGIN PUBLIC KEY")


def test_secret_names() -> None:
    for rel in (
        ".env",
        "app/.env.production",
        "id_ed25519",
        "keys/deploy.pem",
        ".ssh/config",
        "home/.npmrc",
        "gcp/credentials-prod.json",
        "terraform.tfstate",
        "shadow",
        "gshadow",
        "etc/shadow-",
        "gshadow-",
    ):
        assert secret_name(rel), rel
    for rel in (
        ".env.example",
        "id_ed25519.pub",
        "src/environment.py",
        "docs/keys.md",
        "credentials.py",
        "ui/shadow/box.css",
        "shadow.py",
        "passwd",
    ):
        assert not secret_name(rel), rel
    assert not secret_name("ui/shadow", is_dir=True)  # a folder so named is code (issue 48 item 8)


def test_credentials_are_scrubbed_from_urls() -> None:
    from codesight_tui.core.redact import scrub_credentials

    assert scrub_credentials("https://user:SECRET@host/org/pay.git") == "https://host/org/pay.git"
    assert scrub_credentials("https://ghp_abc@github.com/a/b") == "https://github.com/a/b"
    assert scrub_credentials("ssh://git@host/x.git") == "ssh://git@host/x.git"  # a login name is no secret
    assert scrub_credentials("ssh://me:pw@host/x") == "ssh://me@host/x"
    assert scrub_credentials("git@github.com:org/x.git") == "git@github.com:org/x.git"
    assert scrub_credentials("https://h/x.git?access_token=abc&ref=main") == "https://h/x.git?access_token=***&ref=main"
    said = "fatal: unable to access 'https://u:p@h/x/': The requested URL returned error: 403"
    assert scrub_credentials(said) == "fatal: unable to access 'https://h/x/': The requested URL returned error: 403"


@pytest.mark.loopback
def test_ask_never_sends_a_flagged_chunk_even_from_an_old_index(
    tmp_path: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmstub import StubServer
    from surfaces import llm_env

    root = _secret_repo(tmp_path / "repo")
    cs = CodeSight(root, embedder=hash_embedder)
    cs.index()
    # An index built before masking: the token is back in a chunk's text.
    with cs.store.transaction() as c:
        c.execute("UPDATE chunks SET content = content || ? WHERE path = 'src/ok.py'", (f"\n# {GITHUB_TOKEN}\n",))
    with StubServer() as stub:
        llm_env(monkeypatch, "openai", stub.url)
        asker = CodeSight(root, embedder=hash_embedder)
        answer = asker.ask("harmless_function charge_customer rotate_deploy_key", top_k=8)
        sent = json.dumps(stub.requests[-1]["body"])
    assert GITHUB_TOKEN not in sent and "hunter2" not in sent
    assert all(h.path != "src/ok.py" for h in answer.sources)


@pytest.mark.loopback
def test_an_endless_answer_is_cut(repo: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from llmstub import StubServer
    from surfaces import llm_env

    from codesight_tui.core.search.ask import MAX_ANSWER_CHARS

    CodeSight(repo, embedder=hash_embedder).index()
    with StubServer(delay=0) as stub:
        llm_env(monkeypatch, "openai", stub.url, model="endless")
        t0 = time.perf_counter()
        answer = CodeSight(repo, embedder=hash_embedder).ask("how are passwords hashed?")
    assert len(answer.text) == MAX_ANSWER_CHARS and "cut at" in (answer.cut or "")
    assert time.perf_counter() - t0 < 30


@pytest.mark.loopback
def test_a_slow_endless_answer_is_cut_by_time(
    repo: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmstub import StubServer
    from surfaces import llm_env

    CodeSight(repo, embedder=hash_embedder).index()
    with StubServer(delay=0.01) as stub:
        llm_env(monkeypatch, "ollama", stub.url, model="endless")
        monkeypatch.setenv("CODESIGHT_ASK_MAX_SECONDS", "1")
        monkeypatch.setenv("CODESIGHT_LLM_TIMEOUT", "1")
        answer = CodeSight(repo, embedder=hash_embedder).ask("how are passwords hashed?")
    assert answer.cut and "after 1 s" in answer.cut and answer.seconds < 10


# --- 2. permissions ----------------------------------------------------------------------------


def _modes(root: Path) -> list[tuple[str, int]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                out.append((str(p.relative_to(root)), stat.S_IMODE(p.stat().st_mode)))
    return out


def test_everything_written_is_owner_only_whatever_the_umask(
    repo: Path, hash_embedder: HashEmbedder, _isolated_home: Path
) -> None:
    old = os.umask(0o022)
    try:
        cs = CodeSight(repo, embedder=hash_embedder)
        cs.index()
        cs.search("parse config file")
        cs.close()
    finally:
        os.umask(old)
    data, cache = _isolated_home / "data", _isolated_home / "cache"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    wide = [(p, oct(m)) for p, m in _modes(data) + _modes(cache) if m & 0o077]
    assert not wide
    assert any(p.endswith("index.db") for p, _ in _modes(data))
    assert any(".lance" in p for p, _ in _modes(data))


def test_an_older_wider_index_is_tightened_on_the_next_run(
    repo: Path, hash_embedder: HashEmbedder, _isolated_home: Path
) -> None:
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    cs.close()
    data = _isolated_home / "data"
    for p, _ in _modes(data):
        os.chmod(data / p, 0o755 if (data / p).is_dir() else 0o644)
    os.chmod(data, 0o755)
    CodeSight(repo, embedder=hash_embedder).index()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert not [(p, oct(m)) for p, m in _modes(data) if m & 0o077]


# --- 3. damage the index run must find -----------------------------------------------------------


def _garble_table(db: Path, table: str) -> None:
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = c.execute("PRAGMA page_size").fetchone()[0]
    root = c.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
    c.close()
    raw = bytearray(db.read_bytes())
    raw[(root - 1) * page_size : root * page_size] = os.urandom(page_size)
    db.write_bytes(bytes(raw))


def test_a_damaged_fts_table_is_found_and_rebuilt_by_a_plain_index_run(repo: Path, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    cs.close()
    _garble_table(cs.storage.db_path, "chunks_fts_config")
    again = CodeSight(repo, embedder=hash_embedder)  # integrity_check_hours is 24: not due
    report = again.index()
    assert any("damaged" in w and "rebuilt" in w for w in report.warnings), report.warnings
    assert report.embedded == 0  # cached vectors reused
    hits = CodeSight(repo, embedder=hash_embedder).search("parse config file")
    assert hits and hits[0].path.endswith(("config_loader.py", "client.js"))


# --- 5. git's global ignore file --------------------------------------------------------------


def test_the_global_git_ignore_file_is_honoured(
    repo: Path, hash_embedder: HashEmbedder, _isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "notes.local").write_text("launch codes 0000\n")
    (repo / "scratch.tmp").write_text("scratch pad about launch codes\n")
    xdg_ignore = _isolated_home / "xdg" / "git" / "ignore"
    xdg_ignore.parent.mkdir(parents=True)
    xdg_ignore.write_text("*.local\n")
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index(embed=False)
    paths = {p for (p,) in cs.store.conn.execute("SELECT path FROM files")}
    assert "notes.local" not in paths and "scratch.tmp" in paths
    # core.excludesFile, where it is set, is the file git reads instead.
    other = _isolated_home / "my-ignores"
    other.write_text("*.tmp\n")
    (_isolated_home / "no-gitconfig").write_text(f"[core]\n\texcludesFile = {other}\n")
    assert {e.rel_path for e in walk(repo)} >= {"notes.local"}
    assert "scratch.tmp" not in {e.rel_path for e in walk(repo)}


# --- 6. the MCP server's implicit root -----------------------------------------------------------


def test_mcp_never_takes_root_or_home_as_its_implicit_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codesight_tui.mcp_server import Repos, default_roots

    for where in (Path("/"), Path.home()):
        monkeypatch.chdir(where)
        roots = default_roots(None)
        assert Path("/") not in roots and Path.home().resolve() not in roots
        with pytest.raises(CodeSightError, match="--root"):
            Repos(roots).resolve(None)
        with pytest.raises(CodeSightError):
            Repos(roots).resolve("/etc")
    monkeypatch.chdir(tmp_path)
    assert default_roots(None) == [tmp_path.resolve()]


# --- 7. escape sequences never reach the terminal -----------------------------------------------


def test_tui_rows_previews_and_answers_show_escapes_as_text(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    from rich.console import Console

    from codesight_tui.tui.widgets.preview import render_hit
    from codesight_tui.tui.widgets.results import result_row

    root = tmp_path / "repo"
    root.mkdir()
    name = "evil\x1b]0;TITLE\x1b\\.py"
    (root / name).write_text(
        "def payload():\n    return '\x1b]52;c;ZWNobyBwd25lZA==\x1b\\\\ \x1b]8;;http://x\x1b\\\\'\n"
    )
    cs = CodeSight(root, embedder=hash_embedder)
    cs.index()
    hit = cs.search("payload", mode="bm25")[0]
    assert "\x1b" in hit.path  # the real name, to open the real file
    title, strips, _ = render_hit(root, hit)
    shown = title.plain + "".join(seg.text for s in strips for seg in s)
    assert "\x1b" not in shown and "]52;c;ZWNobyBwd25lZA==" in shown
    row = result_row(1, hit, width=80)
    with open(os.devnull, "w") as devnull:
        console = Console(width=80, force_terminal=True, color_system=None, file=devnull)
        assert "\x1b" not in "".join(seg.text for seg in row.render(console))
    assert printable("answer \x1b]52;c;cm0gLXJmIH4=\x07 \x9b31m") == "answer ?]52;c;cm0gLXJmIH4=? ?31m"


# --- 8, 9. a file swapped or grown between walk and read ------------------------------------------


def test_a_file_swapped_for_a_symlink_after_the_walk_is_not_read(tmp_path: Path) -> None:
    from codesight_tui.core.ingest.extract import ExtractError, extract

    root = tmp_path / "repo"
    root.mkdir()
    outside = tmp_path / "id_rsa_outside"
    outside.write_text("TOP SECRET KEY MATERIAL\n")
    (root / "notes.txt").write_text("plain notes\n")
    entry = next(e for e in walk(root) if e.rel_path == "notes.txt")
    (root / "notes.txt").unlink()
    (root / "notes.txt").symlink_to(outside)
    with pytest.raises(ExtractError) as err:
        extract(entry.abs_path, entry.rel_path, max_bytes=1000, expect=entry.seen)
    assert err.value.reason == "symlink"
    # Another regular file moved into its place is not read either.
    (root / "notes.txt").unlink()
    (root / "other.txt").write_text("another file\n")
    os.rename(root / "other.txt", root / "notes.txt")
    with pytest.raises(ExtractError) as err:
        extract(entry.abs_path, entry.rel_path, max_bytes=1000, expect=entry.seen)
    assert err.value.reason == "changed"


def test_a_swap_during_an_index_run_indexes_nothing_of_the_target(
    tmp_path: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codesight_tui.core.index import indexer

    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "notes.txt").write_text("plain notes\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("TOP SECRET KEY MATERIAL\n")
    real_prepare = indexer.prepare_batch

    def swapped(chunker: Chunker, batch: Any, max_bytes: int | None = None) -> Any:
        (root / "notes.txt").unlink()
        (root / "notes.txt").symlink_to(outside)
        return real_prepare(chunker, batch, max_bytes)

    monkeypatch.setattr(indexer, "prepare_batch", swapped)
    cs = CodeSight(root, embedder=hash_embedder)
    cs.index(embed=False)
    assert not cs.search("SECRET MATERIAL", mode="bm25")
    monkeypatch.setattr(indexer, "prepare_batch", real_prepare)
    (root / "notes.txt").unlink()
    (root / "notes.txt").write_text("plain notes\n")
    cs.index(embed=False)  # the file is back: indexed as itself, not remembered as the target
    assert cs.search("plain notes", mode="bm25")[0].path == "notes.txt"
    assert not cs.search("SECRET MATERIAL", mode="bm25")


def test_a_file_that_grows_after_the_walk_is_never_read_past_the_cap(
    tmp_path: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codesight_tui.core.index import indexer
    from codesight_tui.core.ingest.walker import read_bytes

    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    log = root / "app.log"
    log.write_text("started ok\n")
    real_prepare = indexer.prepare_batch
    caps: list[int] = []

    def growing(chunker: Chunker, batch: Any, max_bytes: int | None = None) -> Any:
        with open(log, "a") as fh:
            fh.write("x" * 2_000_000 + "\n")
        caps.append(max_bytes or 0)
        return real_prepare(chunker, batch, max_bytes)

    monkeypatch.setattr(indexer, "prepare_batch", growing)
    cs = CodeSight(root, embedder=hash_embedder, max_file_size=100_000)
    report = cs.index(embed=False)
    assert caps == [100_000]
    assert report.skipped["changed"] == 1 and cs.counts()["chunks"] == 0
    monkeypatch.setattr(indexer, "prepare_batch", real_prepare)
    assert cs.index(embed=False).skipped["too_large"] == 1  # the next walk sees its new size
    # A file that grows while it is read is cut at the cap, plus the one byte that tells.
    assert read_bytes(str(log), 100_000) == (None, "too_large")
    assert read_bytes(str(log), 3_000_000)[0] is not None


# --- 10. document bombs --------------------------------------------------------------------------


def test_a_zip_bomb_docx_is_skipped_before_it_is_parsed(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    from docmaker import make_docx_bomb

    bomb = make_docx_bomb(root / "bomb.docx", 80)
    assert bomb.stat().st_size < 1_000_000
    (root / "ok.py").write_text("def fine():\n    pass\n")
    cs = CodeSight(root, embedder=hash_embedder)
    t0 = time.perf_counter()
    report = cs.index(embed=False)
    assert time.perf_counter() - t0 < 30
    assert report.skipped["too_large_unpacked"] == 1
    assert cs.status()["documents"]["skipped"] == {"bomb.docx": "too_large_unpacked"}


def test_the_document_reader_is_memory_capped(tmp_path: Path) -> None:
    from docmaker import make_pdf_bomb

    from codesight_tui.core.ingest.extract import DocumentReader, ExtractError

    pdf = make_pdf_bomb(tmp_path / "bomb.pdf", 600)  # 600 MB inflated from under a megabyte
    assert pdf.stat().st_size < 2_000_000
    with DocumentReader(timeout=60, memory_mb=400) as reader, pytest.raises(ExtractError) as err:
        reader.read(str(pdf), "bomb.pdf")
    assert err.value.reason in ("too_large_unpacked", "corrupt")


# --- 11, 12. deep trees and dates past 2262 ------------------------------------------------------


def test_a_tree_a_thousand_levels_deep_is_walked(tmp_path: Path, hash_embedder: HashEmbedder) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    deep = root
    for _ in range(1000):  # os.makedirs would recurse as deep itself
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.py").write_text("def at_the_bottom():\n    pass\n")
    try:
        cs = CodeSight(root, embedder=hash_embedder)
        cs.index(embed=False)
        assert cs.search("at_the_bottom", mode="bm25")[0].path.endswith("/bottom.py")
        assert cs.status()["files"] == 1
    finally:  # pytest's own clean-up (shutil.rmtree) recurses per level: take it down here
        (deep / "bottom.py").unlink()
        while deep != root:
            deep.rmdir()
            deep = deep.parent


def test_a_modification_time_after_2262_is_indexed(repo: Path, hash_embedder: HashEmbedder) -> None:
    far = repo / "src" / "future.py"
    far.write_text("def from_the_future():\n    pass\n")
    os.utime(far, (time.time(), 10**10))  # the year 2286: past what 64 bits of nanoseconds hold
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index(embed=False)
    assert cs.search("from_the_future", mode="bm25")[0].path == "src/future.py"
    assert cs.index(embed=False).files_changed == 0  # and it is not re-read on every run


# --- 13, 14. the watcher ---------------------------------------------------------------------


def test_a_batch_that_failed_is_kept_and_retried(tmp_path: Path) -> None:
    from codesight_tui.core.store.watch import Watcher

    root = tmp_path / "repo"
    root.mkdir()
    handled: list[list[str]] = []
    failures = [OSError(28, "No space left on device")]

    def handler(batch: Batch) -> None:
        if failures:
            raise failures.pop()
        handled.append(batch.paths)

    w = Watcher(root, handler, quiet=0.1, poll=True, scan=lambda: {})
    w.start()
    try:
        w.push([(f"f{i}.py", "modified") for i in range(300)])
        end = time.monotonic() + 20
        while not handled and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        w.stop()
    assert handled and len(handled[0]) == 300
    assert w.failures == 1 and "No space left" in w.errors[0]


def test_codesights_own_directories_inside_the_root_are_never_indexed_or_watched(
    tmp_path: Path, hash_embedder: HashEmbedder
) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / "project" / "app.py").write_text("def main():\n    pass\n")
    cs = CodeSight(
        home, embedder=hash_embedder, data_dir=home / ".codesight" / "data", cache_dir=home / ".codesight" / "cache"
    )
    cs.index()
    cs.index()
    paths = {p for (p,) in cs.store.conn.execute("SELECT path FROM files")}
    assert paths == {"project/app.py"}
    batches = []
    w = cs.watch(lambda b, r: batches.append(b), embed=False, quiet=0.1, catch_up=False)
    try:
        cs.index()  # writes into the data directory: no event may come of it
        time.sleep(1.5)
    finally:
        w.stop()
    assert batches == []


# --- 15. an index written by a newer codesight ---------------------------------------------------


def test_an_index_from_a_newer_codesight_is_refused_not_wiped(repo: Path, hash_embedder: HashEmbedder) -> None:
    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    chunks = cs.counts()["chunks"]
    cs.store.set_meta(schema_version="99")
    cs.close()
    calls: list[Callable[[CodeSight], object]] = [
        lambda c: c.status(),
        lambda c: c.search("config"),
        lambda c: c.index(),
    ]
    for call in calls:
        with pytest.raises(CodeSightError, match="newer codesight") as err:
            call(CodeSight(repo, embedder=hash_embedder))
        assert err.value.exit_code == 2
    c = sqlite3.connect(cs.storage.db_path)
    assert c.execute("SELECT count(*) FROM chunks").fetchone()[0] == chunks
    out = subprocess.run(
        [sys.executable, "-m", "codesight_tui", "status", str(repo)], capture_output=True, text=True, env={**os.environ}
    )
    assert out.returncode == 2 and "newer codesight" in out.stderr and "Traceback" not in out.stderr


def test_an_older_index_is_rebuilt_only_under_the_writer_lock(repo: Path, hash_embedder: HashEmbedder) -> None:
    from filelock import FileLock

    cs = CodeSight(repo, embedder=hash_embedder)
    cs.index()
    chunks = cs.counts()["chunks"]
    cs.store.set_meta(schema_version="5")
    cs.close()
    with FileLock(str(cs.index_dir / "write.lock")):
        # Another process holds the lock: the old index is not wiped under it.
        code = (
            "import sys; from codesight_tui import CodeSight\n"
            "from codesight_tui.core.errors import IndexBusyError\n"
            f"try:\n    CodeSight({str(repo)!r}).status(check_disk=False)\nexcept IndexBusyError:\n    sys.exit(3)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 3, out.stderr
    assert sqlite3.connect(cs.storage.db_path).execute("SELECT count(*) FROM chunks").fetchone()[0] == chunks
    fresh = CodeSight(repo, embedder=hash_embedder)
    fresh.index()
    assert fresh.store.get_meta("schema_version") != "5"


# --- 17. MCP frames the SDK's transport would leave unanswered -----------------------------------


def test_mcp_answers_frames_with_lone_surrogates_and_deep_nesting(repo: Path) -> None:
    import select

    proc = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "mcp", "--root", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(repo),
    )

    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(obj_or_line: str | dict[str, Any]) -> None:
        line = obj_or_line if isinstance(obj_or_line, str) else json.dumps(obj_or_line)
        stdin.write(line.encode() + b"\n")
        stdin.flush()

    def reply(want_id: int, timeout: float = 90) -> dict[str, Any]:
        end = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < end:
            ready, _, _ = select.select([stdout], [], [], 0.5)
            if not ready:
                continue
            buf += os.read(stdout.fileno(), 1 << 16)
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg: dict[str, Any] = json.loads(line)
                if msg.get("id") == want_id:
                    return msg
        raise AssertionError(f"no reply to {want_id}")

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "1"},
                },
            }
        )
        reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments":'
            ' {"query": "parse config \\ud800 file", "mode": "bm25"}}}'
        )
        answer = reply(2)
        assert "result" in answer and not answer["result"].get("isError", answer["result"].get("is_error"))
        deep = (
            '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments":'
            ' {"query": "x", "roots": ' + "[" * 100_000 + "]" * 100_000 + "}}}"
        )
        send(deep)
        assert "error" in reply(3)
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})  # and the server still serves
        assert reply(4)["result"]["tools"]
    finally:
        stdin.close()
        proc.wait(30)


# --- signals: SIGTERM (kill), SIGHUP (ssh closed), SIGINT (Ctrl-C) -------------------------------


def _bulk_repo(root: Path, files: int = 4000) -> Path:
    (root / ".git").mkdir(parents=True)
    for i in range(files):
        d = root / f"pkg{i % 40}"
        d.mkdir(exist_ok=True)
        (d / f"mod_{i}.py").write_text(
            "".join(
                f'def handler_{i}_{j}(request, retries={j}):\n    """Handle request {j} of module {i}."""\n'
                f"    for attempt in range(retries):\n        request.send(attempt)\n    return request\n\n\n"
                for j in range(12)
            )
        )
    return root


def _tagged(tag: str) -> list[int]:
    """Live processes started with CODESIGHT_TEST_TAG=tag in their environment (children too)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
        except OSError:
            continue
        if f"CODESIGHT_TEST_TAG={tag}".encode() in env and state != "Z":
            out.append(int(pid))
    return out


def _consistent(db: Path) -> None:
    c = sqlite3.connect(db)
    chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
    fts = c.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
    per_file = c.execute("SELECT coalesce(sum(n_chunks), 0) FROM files WHERE skipped IS NULL").fetchone()[0]
    assert chunks == fts == per_file, (chunks, fts, per_file)


@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", 130)])
def test_a_signal_mid_index_exits_promptly_and_cleanly(
    tmp_path: Path, signame: str, code: int, _isolated_home: Path
) -> None:
    import signal

    root = _bulk_repo(tmp_path / "repo")
    tag = f"{signame}-{os.getpid()}-{time.time_ns()}"
    env = {**os.environ, "CODESIGHT_TEST_TAG": tag}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "index", str(root), "--no-embed"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    time.sleep(2.0)  # imports, the walk, the workers' start: mid-lexical phase
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert time.monotonic() - sent < 10
    assert "Traceback" not in err and "interrupted" in err
    end = time.monotonic() + 10
    while _tagged(tag) and time.monotonic() < end:
        time.sleep(0.1)
    assert not _tagged(tag), "child processes left behind"
    cs = CodeSight(root)
    _consistent(cs.storage.db_path)
    report = cs.index(embed=False)  # no stale lock, and the run completes
    assert report.files == 4000
    _consistent(cs.storage.db_path)


def test_sigterm_ends_watch_and_mcp_with_its_code(repo: Path, tmp_path: Path) -> None:
    import signal

    watch = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "watch", str(repo), "--no-embed"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    mcp = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "mcp", "--root", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(4)
    for proc, sig in ((watch, signal.SIGTERM), (mcp, signal.SIGHUP)):
        assert proc.poll() is None
        proc.send_signal(sig)
    assert watch.wait(15) == 143
    assert mcp.wait(15) == 129
    assert mcp.stderr is not None and watch.stderr is not None
    assert b"Traceback" not in mcp.stderr.read()
    assert "Traceback" not in watch.stderr.read()


def test_sigterm_restores_the_terminal_from_the_tui(repo: Path) -> None:
    import pty
    import select
    import signal

    CodeSight(repo).index(embed=False)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the TUI on a real terminal
        os.environ.update(TERM="xterm-256color", COLUMNS="80", LINES="24")
        os.execv(sys.executable, [sys.executable, "-m", "codesight_tui", str(repo)])
    out = b""

    def read(until: float) -> None:
        nonlocal out
        while time.monotonic() < until:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    out += os.read(fd, 1 << 16)
                except OSError:
                    return

    read(time.monotonic() + 8)
    assert b"\x1b[?1049h" in out  # the alternate screen is on
    os.kill(pid, signal.SIGTERM)
    read(time.monotonic() + 8)
    _, status = os.waitpid(pid, 0)
    tail = out[out.rindex(b"\x1b[?1049h") :]
    assert b"\x1b[?1049l" in tail and b"\x1b[?1000l" in tail, tail[-400:]
    assert os.waitstatus_to_exitcode(status) == 143


# --- 4. the first answer: the static tier before anything that says "embed" -------------------------


@pytest.mark.model
def test_static_vectors_come_before_the_cache_fill_on_a_cpu(
    tmp_path: Path, static_model_dir: Path, _isolated_home: Path
) -> None:
    """MCP's first search waits for the "embed" phase to begin: with a cache file on the machine,
    the cache fill used to begin it before the static tier existed, and the answer was BM25 alone."""
    from conftest import build_repo

    first = build_repo(tmp_path / "first")
    CodeSight(first, static_model=str(static_model_dir), device="cpu").index(embed=True)  # leaves a cache file
    second = build_repo(tmp_path / "second")
    (second / "src" / "lru.py").write_text(
        "from collections import OrderedDict\n\n\nclass LRU:\n"
        "    def put(self, key, value):\n        self.data.popitem(last=False)\n"
    )
    phases: list[str] = []
    cs = CodeSight(second, static_model=str(static_model_dir), device="cpu")
    cs.index(progress=lambda ev: phases.append(ev.phase), embed=True)  # asked for: on a CPU not the default
    assert "static" in phases and "embed" in phases
    assert phases.index("static") < phases.index("embed"), phases


BLOB_SERVICE = {
    "storage/cache.py": "from collections import OrderedDict\n\n\nclass LRUCache:\n"
    "    def __init__(self, capacity=128):\n        self.capacity = capacity\n        self._items = OrderedDict()\n\n"
    "    def get(self, key):\n        if key not in self._items:\n            return None\n"
    "        self._items.move_to_end(key)\n        return self._items[key]\n\n"
    "    def put(self, key, value):\n        self._items[key] = value\n        self._items.move_to_end(key)\n"
    "        if len(self._items) > self.capacity:\n            self._items.popitem(last=False)\n",
    "api/handlers.py": "from storage.cache import LRUCache\nfrom storage.disk import DiskStore\n\n"
    "store = DiskStore('/var/lib/blobs')\nrecent = LRUCache(capacity=1024)\n\n\ndef put_blob(request, key):\n"
    "    if store.is_full(10 * 2**30):\n        return 507, b'storage full'\n    store.write(key, request.body)\n",
    "storage/disk.py": "from pathlib import Path\n\n\nclass DiskStore:\n    def is_full(self, limit):\n"
    "        used = sum(p.stat().st_size for p in self.root.iterdir())\n        return used >= limit\n",
    "docs/README.md": "# Blob service\n\n- `PUT /blobs/<key>` stores one; it fails with 507 when the disk is full.\n"
    "- `DELETE /blobs/<key>` removes the entry.\n",
}


@pytest.mark.model
def test_a_question_with_no_word_of_the_code_finds_it_in_the_first_answer(
    tmp_path: Path, static_model_dir: Path
) -> None:
    """Item 4: the LRU cache says none of "evict the least recently used entry when full"; BM25
    cannot see it, the static tier must, and it is there before the first answer."""
    for rel, text in BLOB_SERVICE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    cs = CodeSight(tmp_path, static_model=str(static_model_dir), device="cpu")
    cs.index(embed=False, static=True)
    question = "evict the least recently used entry when full"
    assert "storage/cache.py" not in [h.path for h in cs.search(question, mode="bm25")]
    hits = cs.search(question, mode="hybrid", vectors=Vectors.STATIC)
    assert "storage/cache.py" in [h.path for h in hits[:3]], [h.path for h in hits]


# --- 17. minor: a damaged static model, overlapping roots ---------------------------------------


def test_a_damaged_distilled_static_model_is_made_again(
    tmp_path: Path, static_model_dir: Path, monkeypatch: pytest.MonkeyPatch, _isolated_home: Path
) -> None:
    import shutil

    from codesight_tui.core.index import static

    cs = CodeSight(tmp_path, static_model="distilled", device="cpu")  # never "auto": that may be the shipped model
    path = cs.static_path()
    assert path is not None
    shutil.copytree(static_model_dir, path)
    (path / "model.safetensors").write_bytes(b"\x00garbage")
    static._LOADED.clear()
    distilled: list[Path] = []

    def fake_distill(
        base: Any, dest: Path, **kw: Any
    ) -> float:  # the real one takes half a minute: the repair is what is tested
        distilled.append(dest)
        shutil.copytree(static_model_dir, dest)
        return 0.1

    monkeypatch.setattr(static, "distill", fake_distill)
    with pytest.raises(CodeSightError):
        cs.static_model()  # a search does not repair it
    model = cs.static_model(create=True)  # an index run does, once
    assert model is not None and distilled == [path]
    assert any("damaged" in n for n in cs.take_notices())
    assert len(model.encode(["parse the config file"])[0]) == model.dim


def test_overlapping_roots_are_one_index(tmp_path: Path) -> None:
    from codesight_tui.core.ingest.paths import outermost

    top = tmp_path / "top"
    subs = [top / f"s{i}" / "deeper" for i in range(12)]
    for s in subs:
        s.mkdir(parents=True)
    assert outermost([*subs, top, subs[0]]) == [top.resolve()]
    assert outermost([subs[0], subs[1]]) == [subs[0].resolve(), subs[1].resolve()]
    (top / "a.py").write_text("def overlap_marker():\n    pass\n")
    paths = [a for p in (top, *subs) for a in ("--path", str(p))]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "codesight_tui",
            "search",
            "overlap_marker",
            "--mode",
            "bm25",
            "--json",
            "--yes",
            *paths,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)
    assert [h["path"] for h in hits][:1] == ["a.py"]
    data = Path(os.environ["CODESIGHT_DATA_DIR"])
    assert len([d for d in data.iterdir() if d.is_dir()]) == 1


def test_a_moment_of_locked_at_open_is_waited_out(
    repo: Path, hash_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite says "locked" at once, without its busy timeout, while a writer recovers its WAL:
    an MCP search that opened the index at that instant failed (seen in CI under load)."""
    from codesight_tui.core.errors import IndexBusyError
    from codesight_tui.core.index import storage

    CodeSight(repo, embedder=hash_embedder).index(embed=False)
    cs = CodeSight(repo, embedder=hash_embedder)
    real, calls = cs.storage.open_store, []

    def flaky() -> Any:
        calls.append(1)
        if len(calls) < 3:
            raise IndexBusyError("index is locked by another process")
        return real()

    monkeypatch.setattr(cs.storage, "open_store", flaky)
    assert cs.is_indexed() and len(calls) == 3
    always = CodeSight(repo, embedder=hash_embedder)
    monkeypatch.setattr(always.storage, "open_store", lambda: (_ for _ in ()).throw(IndexBusyError("locked")))
    monkeypatch.setattr(storage, "OPEN_RETRIES", (0.01, None))
    with pytest.raises(IndexBusyError):
        _ = always.store
