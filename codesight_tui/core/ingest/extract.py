"""Reading a file to text: the one seam between file formats and the rest of the index.

``extract(abs_path, rel_path)`` gives an ``Extracted``: the text (lines joined by ``\\n``), the
blocks the document's own structure suggests (paragraphs on a PDF page, a DOCX heading's section,
a slide with its notes), each with its scope (``page 12``, ``Design > Retries``, ``slide 4: Plan``),
and a locator map (the first line of each page or slide). A text file is the simplest case: its
text, no blocks, no locators. The chunker, the store and the searcher only ever see text, blocks
and locators, never a format.

Documents are read in a child process (``DocumentReader``), one at a time, each within a time
limit: a PDF that makes the parser spin, or crash, costs that one file, never the index run.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from codesight_tui.core.ingest.walker import Seen, read_bytes, read_text
from codesight_tui.core.languages import DOCUMENT_EXTENSIONS, detect_language

if TYPE_CHECKING:
    import threading
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from typing_extensions import Self

# (first line, last line, scope): 0-based, inclusive
Block = tuple[int, int, str]
# (first line, 1-based; kind: "page" or "slide"; its number)
Locator = tuple[int, str, int]


@dataclass(slots=True)
class Extracted:
    text: str
    language: str
    blocks: list[Block] | None = None  # None: the chunker finds its own (code, Markdown, text)
    locators: list[Locator] = field(default_factory=list)


class ExtractError(Exception):
    """A file with no indexable text. ``reason`` is what ``status`` counts it under: ``encrypted``,
    ``corrupt``, ``no_text`` (an image-only PDF), ``timeout``, ``binary``, ``unreadable``."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


DOCUMENT_REASONS = ("encrypted", "corrupt", "no_text", "timeout", "too_large_unpacked")
# The document reader's address space (the setting document_memory_mb): a PDF whose 845 KB hold a
# 290 MB stream took 3.6 GB to read without it.
DOCUMENT_MEMORY_MB = 2048

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\u2028|\u2029|\x0c")
_END_OF_SENTENCE = (".", "!", "?", ":", ";", "\u3002")
# Office files that are encrypted are OLE compound files, not zip packages.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _clean_lines(text: str) -> list[str]:
    """Lines of extracted text: one kind of line break, no control characters, no trailing blanks."""
    text = text.replace("\u00ad", "").replace("\x02", "")  # soft hyphens (pdfium marks them 0x02)
    return [_CONTROL.sub(" ", line).rstrip() for line in _LINE_BREAK.split(text)]


def _paragraphs(lines: list[str]) -> list[tuple[int, int]]:
    """Paragraphs of a PDF page, whose text has a line break per printed line: a blank line ends
    one, and so does a short line that ends a sentence (the last line of a paragraph rarely
    reaches the right margin)."""
    width = max((len(line) for line in lines), default=0)
    out: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate(lines):
        if not line.strip():
            if start is not None:
                out.append((start, i - 1))
                start = None
            continue
        if start is None:
            start = i
        if line.endswith(_END_OF_SENTENCE) and len(line) < 0.9 * width:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(lines) - 1))
    return out


class _Builder:
    """Collects lines, blocks and locators as a document is read."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.lines: list[str] = []
        self.blocks: list[Block] = []
        self.locators: list[Locator] = []

    def locate(self, kind: str, number: int) -> None:
        self.locators.append((len(self.lines) + 1, kind, number))

    def add(self, lines: list[str], scope: str, spans: list[tuple[int, int]] | None = None) -> None:
        """Append ``lines`` as one block, or as the blocks ``spans`` (0-based within ``lines``)."""
        base = len(self.lines)
        if spans is None:
            spans = [(0, len(lines) - 1)] if lines else []
        self.blocks.extend((base + s, base + e, scope) for s, e in spans)
        self.lines.extend(lines)

    def done(self) -> Extracted:
        if not any(line.strip() for line in self.lines):
            raise ExtractError("no_text")
        return Extracted("\n".join(self.lines), self.language, self.blocks, self.locators)


def _pdf(data: bytes) -> Extracted:
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise ExtractError("encrypted" if "password" in str(exc).lower() else "corrupt") from None
    out = _Builder("pdf")
    try:
        for i in range(len(doc)):
            page = doc[i]
            try:
                textpage = page.get_textpage()
                try:
                    lines = _clean_lines(textpage.get_text_bounded())
                finally:
                    textpage.close()
            finally:
                page.close()
            while lines and not lines[-1].strip():
                lines.pop()
            if not any(line.strip() for line in lines):
                continue
            out.locate("page", i + 1)
            out.add(lines + [""], f"page {i + 1}", _paragraphs(lines))
    except pdfium.PdfiumError:
        raise ExtractError("corrupt") from None
    finally:
        doc.close()
    return out.done()


# A DOCX or PPTX is a zip of XML parts: what they inflate to is what the parser holds in memory
# (about ten times over, as a tree). Real documents inflate to a few MB; a 344 KB "zip bomb" to 118 MB.
MAX_INFLATED_XML = 64 * 1024 * 1024


def _office_package(data: bytes, opener: Callable[[Any], Any]) -> Any:
    """Open a DOCX or PPTX package, telling an encrypted file (an OLE container) from a broken
    one, and refusing one whose XML parts inflate past ``MAX_INFLATED_XML`` before parsing it."""
    import io
    import zipfile

    if data[:8] == _OLE_MAGIC:
        raise ExtractError("encrypted")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            inflated = sum(i.file_size for i in zf.infolist() if i.filename.lower().endswith((".xml", ".rels")))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ExtractError("corrupt") from None
    if inflated > MAX_INFLATED_XML:
        raise ExtractError("too_large_unpacked", f"its XML inflates to {inflated >> 20} MB")
    try:
        return opener(io.BytesIO(data))
    except Exception:  # noqa: BLE001 - a parser's own errors on a broken file: the file is skipped as corrupt
        raise ExtractError("corrupt") from None


_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|título|titolo)\s*(\d)$", re.IGNORECASE)


def _docx(data: bytes) -> Extracted:
    import docx
    from docx.table import Table

    doc = _office_package(data, docx.Document)
    out = _Builder("docx")
    trail: list[tuple[int, str]] = []  # the headings above the current paragraph: (level, text)
    pending: list[str] = []

    def flush() -> None:
        if pending:
            scope = " > ".join(t for _, t in trail)
            out.add(pending + [""], scope, [(k, k) for k in range(len(pending))])
            pending.clear()

    try:
        for item in doc.iter_inner_content():
            if isinstance(item, Table):
                for row in item.rows:
                    cells = list(dict.fromkeys(c.text.strip() for c in row.cells if c.text.strip()))
                    if cells:
                        pending.append(" | ".join(" ".join(_clean_lines(c)) for c in cells))
                continue
            text = " ".join(line.strip() for line in _clean_lines(item.text) if line.strip())
            if not text:
                continue
            style = (item.style.name if item.style is not None else "") or ""
            m = _HEADING_STYLE.match(style.strip())
            level = int(m.group(1)) if m else (0 if style.strip().lower() == "title" else None)
            if level is not None:
                flush()
                trail = [h for h in trail if h[0] < level] + [(level, text[:80])]
            pending.append(text)
    except ExtractError:
        raise
    except Exception:  # noqa: BLE001 - a parser's own errors on a broken file: the file is skipped as corrupt
        raise ExtractError("corrupt") from None
    flush()
    return out.done()


def _shape_lines(shapes: Iterable[Any]) -> list[str]:
    lines: list[str] = []
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            lines += _shape_lines(shape.shapes)
        elif getattr(shape, "has_text_frame", False):
            for para in shape.text_frame.paragraphs:
                text = " ".join(_clean_lines(para.text)).strip()
                if text:
                    lines.append(text)
        elif getattr(shape, "has_table", False):
            for row in shape.table.rows:
                cells = [" ".join(_clean_lines(c.text)).strip() for c in row.cells]
                if any(cells):
                    lines.append(" | ".join(c for c in cells if c))
    return lines


def _pptx(data: bytes) -> Extracted:
    from pptx import Presentation

    prs = _office_package(data, Presentation)
    out = _Builder("pptx")
    try:
        for n, slide in enumerate(prs.slides, start=1):
            lines = _shape_lines(slide.shapes)
            if slide.has_notes_slide:
                notes = (
                    [line.strip() for line in _clean_lines(slide.notes_slide.notes_text_frame.text) if line.strip()]
                    if slide.notes_slide.notes_text_frame is not None
                    else []
                )
                if notes:
                    lines += ["Notes:"] + notes
            if not lines:
                continue
            title = slide.shapes.title.text.strip() if slide.shapes.title is not None else ""
            title = " ".join(_clean_lines(title)).strip()[:80]
            out.locate("slide", n)
            out.add(lines + [""], f"slide {n}: {title}" if title else f"slide {n}")
    except ExtractError:
        raise
    except Exception:  # noqa: BLE001 - a parser's own errors on a broken file: the file is skipped as corrupt
        raise ExtractError("corrupt") from None
    return out.done()


_READERS = {"pdf": _pdf, "docx": _docx, "pptx": _pptx}


def extract(abs_path: str, rel_path: str, *, max_bytes: int | None = None, expect: Seen | None = None) -> Extracted:
    """The text of one file, with its structure where it is a document. Raises ``ExtractError``.

    The file is opened without following a symlink, must still be the file the walk saw
    (``expect``: inode, size, modification time) and is never read past ``max_bytes``: what changed since the walk is skipped this run and read
    by the next one."""
    reader = _READERS.get(DOCUMENT_EXTENSIONS.get(PurePosixPath(rel_path).suffix.lower(), ""))
    if reader is not None:
        data, why = read_bytes(abs_path, max_bytes, expect)
        if data is None:
            raise ExtractError(why or "unreadable")
        return reader(data)
    text, why = read_text(abs_path, max_bytes, expect)
    if text is None:
        raise ExtractError(why or "unreadable")
    return Extracted(text, detect_language(rel_path, text[:200].encode(), text))


# --- a child process that reads documents, each within a time limit ---------------------------


def _limit_memory(mb: int) -> None:
    """Cap the child's address space: a parser that inflates a small file into gigabytes fails
    with MemoryError (or dies) in the child, and the file is skipped; the index run goes on."""
    try:
        import resource

        limit = mb * 1024 * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # no rlimits here (Windows): the time limit still holds
        pass


def _serve(conn: Connection, quiet: bool, memory_mb: int = 0, parent: int | None = None) -> None:
    from codesight_tui.core.child import init_child

    init_child(quiet, parent)
    # Parsers imported before the cap: their import is not what a bomb should be charged for.
    import docx  # noqa: F401
    import pptx  # noqa: F401
    import pypdfium2  # noqa: F401

    if memory_mb:
        _limit_memory(memory_mb)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        abs_path, rel_path, max_bytes, expect = job
        try:
            conn.send(("ok", extract(abs_path, rel_path, max_bytes=max_bytes, expect=expect)))
        except ExtractError as exc:
            conn.send(("skip", exc.reason))
        except MemoryError:
            conn.send(("skip", "too_large_unpacked"))
        except Exception:  # a parser bug: the file is skipped, the run goes on  # noqa: BLE001
            conn.send(("skip", "corrupt"))


class DocumentReader:
    """Extracts documents in a child process, each within ``timeout`` seconds.

    A document that takes longer, or kills the child (a parser crash), is reported as
    ``ExtractError("timeout")`` / ``("corrupt")`` and the next one gets a fresh child. The child
    starts at the first document, so a tree without documents never pays for it."""

    def __init__(
        self, timeout: float = 60.0, memory_mb: int = DOCUMENT_MEMORY_MB, max_bytes: int | None = None
    ) -> None:
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_bytes = max_bytes
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None

    def _start(self) -> None:
        from codesight_tui.core.child import quiet_for_children

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_serve,
            args=(child, quiet_for_children(), self.memory_mb, os.getpid()),
            daemon=True,
            name="codesight-documents",
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent

    def read(
        self, abs_path: str, rel_path: str, cancel: threading.Event | None = None, expect: Seen | None = None
    ) -> Extracted:
        if self._proc is None or self._conn is None or not self._proc.is_alive():
            self._start()
        proc, conn = self._proc, self._conn
        assert proc is not None and conn is not None
        try:
            conn.send((abs_path, rel_path, self.max_bytes, expect))
        except (BrokenPipeError, OSError):
            self.close()
            raise ExtractError("corrupt") from None
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if conn.poll(0.05):
                    status, payload = conn.recv()
                    break
            except (EOFError, OSError):  # the child died on this file
                self.close()
                raise ExtractError("corrupt") from None
            if cancel is not None and cancel.is_set():
                self.close()
                raise ExtractError("cancelled")
            if time.monotonic() > deadline:
                self.close()
                raise ExtractError("timeout")
            if not proc.is_alive() and not conn.poll(0):
                self.close()
                raise ExtractError("corrupt")
        if status == "ok":
            found: Extracted = payload
            return found
        raise ExtractError(payload)

    def close(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(2)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
