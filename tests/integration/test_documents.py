"""Documents beside code: PDF, DOCX and PPTX files built here with the libraries codesight reads
them with, indexed into real SQLite and searched, with their pages and slides."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HashEmbedder, snapshot_tree
from docmaker import big_pdf, make_docx, make_encrypted_pdf, make_pdf, make_pptx

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.ingest.extract import DocumentReader, ExtractError, extract
from codesight_tui.core.search.contract import SearchResult
from codesight_tui.tui.editor import viewer_argv
from codesight_tui.tui.widgets.preview import render_hit

RETRY = (
    "The uploader retries failed uploads three times with exponential backoff. Each attempt waits twice"
    " as long as the one before it, and gives up at the deadline."
)
QUOTA = "Each region has a nightly quota that the scheduler enforces before it accepts a batch job."


def doc_repo(root: Path) -> Path:
    root.mkdir()
    (root / "app.py").write_text("def upload(path, retries=3):\n    '''Send a file.'''\n    return path\n")
    docs = root / "docs"
    docs.mkdir()
    make_pdf(
        docs / "design.pdf",
        [
            ["Design notes", "An overview of the system and its parts."],
            [],
            ["Retry policy", RETRY],
            ["Scheduling", QUOTA],
        ],
    )
    make_docx(
        docs / "runbook.docx",
        [
            (1, "Runbook", ["What to do when things break."]),
            (2, "Rotating credentials", ["Rotate the signing keys every ninety days."]),
            (1, "Escalation", ["Page the on-call engineer after two failed restarts."]),
        ],
    )
    make_pptx(
        docs / "roadmap.pptx",
        [
            ("Roadmap", ["Ship search", "Ship answers"], "Mention the offline model hub."),
            ("Risks", ["Vendor lock-in", "Licence audits"], ""),
        ],
    )
    return root


def test_pdf_text_pages_and_paragraphs(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "a.pdf", [["Intro", "First page text."], [], ["Retry policy", RETRY, "Closing words."]])
    ex = extract(str(pdf), "a.pdf")
    lines = ex.text.split("\n")
    assert ex.language == "pdf" and "exponential backoff" in ex.text
    # the empty second page has no text and no locator; the others start where their text starts
    assert [(kind, n) for _, kind, n in ex.locators] == [("page", 1), ("page", 3)]
    first3 = ex.locators[1][0]
    assert lines[first3 - 1] == "Retry policy"
    assert ex.blocks is not None
    scopes = {scope for *_, scope in ex.blocks}
    assert scopes == {"page 1", "page 3"}
    # paragraphs: the retry paragraph ends a block, and the closing words start another
    page3 = [(s, e) for s, e, scope in ex.blocks if scope == "page 3"]
    assert len(page3) >= 2 and lines[page3[-1][0]] == "Closing words."


def test_docx_sections_follow_headings_and_pptx_slides_keep_notes(tmp_path: Path) -> None:
    docx = make_docx(
        tmp_path / "r.docx",
        [
            (1, "Runbook", ["Intro."]),
            (2, "Rotating credentials", ["Rotate keys."]),
            (1, "Escalation", ["Page on-call."]),
        ],
    )
    ex = extract(str(docx), "r.docx")
    by_scope: dict[str, list[str]] = {}
    assert ex.blocks is not None
    for s, e, scope in ex.blocks:
        by_scope.setdefault(scope, []).extend(ex.text.split("\n")[s : e + 1])
    assert by_scope["Runbook > Rotating credentials"] == ["Rotating credentials", "Rotate keys."]
    assert by_scope["Escalation"] == ["Escalation", "Page on-call."]
    assert ex.locators == []  # Word has no stable pages

    deck = make_pptx(
        tmp_path / "d.pptx",
        [("Roadmap", ["Ship search"], "Say it slowly."), ("Blank", [], ""), ("Risks", ["Vendor lock-in"], "")],
    )
    ex = extract(str(deck), "d.pptx")
    assert [(kind, n) for _, kind, n in ex.locators] == [("slide", 1), ("slide", 2), ("slide", 3)]
    assert [scope for *_, scope in ex.blocks or []] == ["slide 1: Roadmap", "slide 2: Blank", "slide 3: Risks"]
    assert "Notes:\nSay it slowly." in ex.text


def test_unreadable_documents_say_why(tmp_path: Path) -> None:
    good = make_pdf(tmp_path / "good.pdf", [["Some text."]])
    cases = {
        "enc.pdf": make_encrypted_pdf(tmp_path / "enc.pdf", good).read_bytes(),
        "broken.pdf": b"%PDF-1.4\n1 0 obj garbage",
        "scan.pdf": make_pdf(tmp_path / "scan-src.pdf", [[], []]).read_bytes(),  # pages without a text layer
        "broken.docx": b"PK\x03\x04 not a zip at all",
        "locked.docx": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600,  # Office encrypts into an OLE file
        "broken.pptx": os.urandom(3000),
    }
    want = {
        "enc.pdf": "encrypted",
        "broken.pdf": "corrupt",
        "scan.pdf": "no_text",
        "broken.docx": "corrupt",
        "locked.docx": "encrypted",
        "broken.pptx": "corrupt",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ExtractError) as err:
            extract(str(tmp_path / name), name)
        assert err.value.reason == want[name], name


def test_reader_kills_a_document_over_its_time_limit(tmp_path: Path) -> None:
    big = big_pdf(tmp_path / "big.pdf", 60)
    small = make_pptx(tmp_path / "s.pptx", [("Title", ["point"], "")])
    with DocumentReader(timeout=0.001) as reader:
        with pytest.raises(ExtractError) as err:
            reader.read(str(big), "big.pdf")
        assert err.value.reason == "timeout"
        reader.timeout = 30
        assert "point" in reader.read(str(small), "s.pptx").text  # a fresh child takes the next file


def test_documents_are_indexed_searched_and_located(
    tmp_path: Path, settings: Settings, hash_embedder: HashEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    root = doc_repo(tmp_path / "repo")
    before = snapshot_tree(root)
    cs = CodeSight(root, settings=settings, embedder=hash_embedder)
    report = cs.index()
    assert report.files == 4 and report.vectors_pending == 0

    hit = cs.search("exponential backoff deadline", top_k=3, mode="bm25")[0]
    assert (hit.path, hit.page, hit.slide) == ("docs/design.pdf", 3, None)
    assert hit.location == "docs/design.pdf p.3" and hit.scope == "page 3" and hit.is_document
    hit = cs.search("nightly quota scheduler", top_k=3)[0]  # hybrid
    assert hit.location == "docs/design.pdf p.4"
    hit = cs.search("offline model hub", top_k=3, mode="bm25")[0]  # speaker notes are searchable
    assert (hit.slide, hit.name, hit.location) == (1, "slide 1: Roadmap", "docs/roadmap.pptx slide 1")
    hit = cs.search("rotate signing keys", top_k=3, mode="bm25")[0]
    assert hit.location == "docs/runbook.docx § Rotating credentials" and hit.page is None
    # issue 35: a Word hit reads by its heading, not by lines of its extracted text (":1-5")
    from codesight_tui.cli import main
    from codesight_tui.tui.widgets.results import result_row

    assert main(["search", "rotate signing keys", "--path", str(root), "--mode", "bm25", "-n", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("docs/runbook.docx § Rotating credentials") and ".docx:" not in first
    assert "runbook.docx §" in result_row(1, hit).plain and "docx:" not in result_row(1, hit).plain
    code = cs.search("upload", top_k=5, mode="bm25")
    assert any(h.path == "app.py" and h.page is None and h.location.startswith("app.py:") for h in code)

    text = cs.document_text("docs/design.pdf")
    assert text is not None and "Retry policy" in text
    assert "Rotate the signing keys" in (cs.document_text("docs/runbook.docx") or "")
    assert cs.document_text("app.py") is None
    assert snapshot_tree(root) == before  # nothing extracted into the repository

    again = cs.index()
    assert again.files_changed == 0  # re-extracted only when changed
    make_pptx(root / "docs" / "roadmap.pptx", [("Roadmap", ["Ship documents"], "")])
    again = cs.index()
    assert again.files_changed == 1
    assert all(h.path != "docs/roadmap.pptx" for h in cs.search("offline model hub", mode="bm25"))
    cs.close()


def test_bad_documents_are_skipped_with_reasons_in_status(tmp_path: Path, settings: Settings) -> None:
    root = doc_repo(tmp_path / "repo")
    (root / "docs" / "broken.pdf").write_bytes(b"%PDF-1.4 nothing")
    make_encrypted_pdf(root / "docs" / "secret.pdf", root / "docs" / "design.pdf")
    make_pdf(root / "docs" / "scan.pdf", [[]])
    cs = CodeSight(root, settings=settings)
    report = cs.index(embed=False)
    assert report.skipped["corrupt"] == 1 and report.skipped["encrypted"] == 1 and report.skipped["no_text"] == 1
    st = cs.status()
    assert st["documents"] == {
        "indexed": 3,
        "skipped": {"docs/broken.pdf": "corrupt", "docs/scan.pdf": "no_text", "docs/secret.pdf": "encrypted"},
    }
    assert st["skipped"]["corrupt"] == 1  # counted once, not per run
    assert cs.index(embed=False).skipped == {}  # remembered: not read again until they change
    assert cs.status()["skipped"]["encrypted"] == 1
    cs.close()


def test_document_size_cap_and_time_limit(tmp_path: Path, settings: Settings) -> None:
    root = doc_repo(tmp_path / "repo")
    big_pdf(root / "docs" / "report.pdf", 40)
    cs = CodeSight(root, settings=settings.model_copy(update={"max_document_size": 50_000}))
    report = cs.index(embed=False)
    assert report.skipped["too_large"] == 1 and cs.status()["documents"]["indexed"] == 3
    cs.close()
    cs = CodeSight(root, settings=settings.model_copy(update={"document_timeout": 0.001}))
    report = cs.index(embed=False, force=True)
    assert report.skipped["timeout"] == 4  # every document, and the code is indexed all the same
    assert cs.search("upload", mode="bm25")
    cs.close()


def test_an_older_index_reads_documents_it_remembered_as_binary(tmp_path: Path, settings: Settings) -> None:
    root = doc_repo(tmp_path / "repo")
    cs = CodeSight(root, settings=settings)
    cs.index(embed=False)
    store = cs.store
    st = (root / "docs" / "runbook.docx").stat()
    with store.transaction():  # what an index made before documents holds for a .docx
        store.write_skipped("docs/runbook.docx", st.st_mtime_ns, st.st_size, "binary")
    store.conn.execute("DELETE FROM meta WHERE key='documents'")
    assert not cs.search("signing keys", mode="bm25")
    cs.index(embed=False)
    assert cs.search("signing keys", mode="bm25")[0].path == "docs/runbook.docx"
    cs.close()


def test_cli_json_and_text_carry_pages(tmp_path: Path, settings: Settings) -> None:
    root = doc_repo(tmp_path / "repo")
    env = {**os.environ, "CODESIGHT_DATA_DIR": str(settings.data_dir), "CODESIGHT_CACHE_DIR": str(settings.cache_dir)}

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codesight_tui", *a], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )

    assert run("index", "--no-embed").returncode == 0
    out = run("search", "--mode", "bm25", "--json", "exponential backoff")
    hits = json.loads(out.stdout)
    assert hits[0]["page"] == 3 and hits[0]["slide"] is None and hits[0]["location"] == "docs/design.pdf p.3"
    out = run("search", "--mode", "bm25", "Vendor lock-in")
    assert out.stdout.startswith("docs/roadmap.pptx slide 2  Risks  [")
    status = run("status")
    assert "docs     3 indexed" in status.stdout


def test_preview_shows_the_extracted_page_around_the_hit(tmp_path: Path) -> None:
    text = "\n".join(f"line {i}" for i in range(1, 200))
    hit = SearchResult("docs/a.pdf", 100, 104, "page 9", "pdf", 1.0, 1, None, "line 100", 1, line=102, page=9)
    title, strips, row = render_hit(tmp_path, hit, document=text)
    assert title.plain.startswith("docs/a.pdf p.9")
    assert "line 102" in "".join(seg.text for seg in strips[row])
    # no extracted text at hand: the indexed chunk, never the PDF's bytes
    title, strips, row = render_hit(tmp_path, hit)
    assert "line 100" in "".join(seg.text for seg in strips[0])


def test_viewer_gets_argv_and_the_page_never_a_shell(tmp_path: Path) -> None:
    nasty = str(tmp_path / "$(touch pwned).pdf")
    assert viewer_argv(nasty, 12, platform="linux") == ["xdg-open", nasty]
    assert viewer_argv(nasty, 12, platform="darwin") == ["open", nasty]
    assert viewer_argv(nasty, 12, template="zathura") == ["zathura", "--page=12", nasty]
    assert viewer_argv(nasty, 3, template="okular") == ["okular", "-p", "3", nasty]
    assert viewer_argv(nasty, 7, template="myviewer --goto {page} {path}") == ["myviewer", "--goto", "7", nasty]
    subprocess.run(viewer_argv(nasty, 1, template="true"), check=True)
    assert not (tmp_path / "pwned").exists()


async def test_tui_lists_document_hits_by_page_and_previews_the_extracted_text(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from surfaces import make_app, search, settle

    from codesight_tui.tui.widgets.preview import Preview
    from codesight_tui.tui.widgets.results import ResultsList

    root = doc_repo(tmp_path / "repo")
    app = make_app(root, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await search(app, pilot, "exponential backoff deadline")
        results = app.query_one(ResultsList)
        assert app.hits[0].page == 3
        row = str(results.get_option_at_index(0).prompt)
        assert "docs/design.pdf p.3" in row and "page 3" not in row
        preview = app.query_one(Preview)
        await settle(app, pilot)
        title = str(preview.query_one("#preview-title").render())
        assert title.startswith("docs/design.pdf p.3") and "extracted text" in title
        opened = []
        monkeypatch.setattr("subprocess.Popen", lambda argv, **kw: opened.append(argv))
        await pilot.press("enter")  # a document goes to the system's viewer, not the editor
        assert opened == [["xdg-open", str(root / "docs" / "design.pdf")]]


def test_a_document_hit_marks_the_line_that_answers_not_the_first_mention(tmp_path: Path, settings: Settings) -> None:
    """Issue 35, item 7: a PDF preview marked the first line holding any word of the query, often
    a passing mention above the passage that answers; now the line holding the most of them (a
    plural also counts where the text has the singular)."""
    root = tmp_path / "repo"
    root.mkdir()
    make_pdf(
        root / "guide.pdf",
        [
            [
                "Storage",
                "Every server keeps a cache of recent pages.",
                "Pages are written to disk in batches.",
                "Eviction drops the least recently used page when the cache is full.",
                "Closing words.",
            ]
        ],
    )
    cs = CodeSight(root, settings=settings)
    cs.index(embed=False)
    hit = cs.search("cache eviction of least recently used pages", mode="bm25")[0]
    text = cs.document_text(hit.path)
    title, strips, row = render_hit(root, hit, document=text)
    assert "Eviction drops the least recently used page" in "".join(seg.text for seg in strips[row])
    cs.close()
