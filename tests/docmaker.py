"""Real PDF, DOCX and PPTX files for tests and benchmarks, written with the libraries codesight
reads them with (pypdfium2, python-docx, python-pptx)."""

from __future__ import annotations

import ctypes
import random
import textwrap
from pathlib import Path

WORDS = [
    "the",
    "service",
    "retries",
    "each",
    "request",
    "with",
    "a",
    "backoff",
    "that",
    "doubles",
    "until",
    "the",
    "deadline",
    "passes",
    "while",
    "workers",
    "drain",
    "the",
    "queue",
    "and",
    "report",
    "progress",
    "to",
    "the",
    "scheduler",
    "which",
    "balances",
    "load",
    "across",
    "regions",
    "so",
    "that",
    "a",
    "failed",
    "node",
    "never",
    "loses",
    "an",
    "accepted",
    "job",
    "and",
    "every",
    "record",
    "is",
    "written",
    "once",
    "before",
    "the",
    "index",
    "is",
    "compacted",
]


def filler(rng: random.Random, n_words: int) -> str:
    """A plausible sentence-ish paragraph of ``n_words`` words."""
    words = [rng.choice(WORDS) for _ in range(n_words)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def make_pdf(path: Path, pages: list[list[str]], width: int = 88) -> Path:
    """A PDF with one page per item of ``pages``, each a list of paragraphs, wrapped at ``width``
    characters and set in Helvetica (a real text layer). An empty list is a page without text."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    font = raw.FPDFText_LoadStandardFont(pdf, b"Helvetica")
    for paragraphs in pages:
        page = pdf.new_page(612, 792)
        y = 750.0
        for para in paragraphs:
            for line in textwrap.wrap(para, width) or [""]:
                obj = raw.FPDFPageObj_CreateTextObj(pdf, font, 10.0)
                buf = ctypes.create_string_buffer((line + "\x00").encode("utf-16-le"))
                raw.FPDFText_SetText(obj, ctypes.cast(buf, ctypes.POINTER(raw.FPDF_WCHAR)))
                raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 54, y)
                raw.FPDFPage_InsertObject(page, obj)
                y -= 13
            y -= 13  # a blank line between paragraphs
        raw.FPDFPage_GenerateContent(page)
        page.close()
    pdf.save(str(path))
    pdf.close()
    return path


def make_docx(path: Path, sections: list[tuple[int, str, list[str]]]) -> Path:
    """A DOCX of ``(heading level, heading, paragraphs)`` sections (level 0: no heading)."""
    import docx

    doc = docx.Document()
    for level, heading, paragraphs in sections:
        if level:
            doc.add_heading(heading, level=level)
        for para in paragraphs:
            doc.add_paragraph(para)
    doc.save(str(path))
    return path


def make_pptx(path: Path, slides: list[tuple[str, list[str], str]]) -> Path:
    """A PPTX of ``(title, bullet lines, speaker notes)`` slides."""
    from pptx import Presentation

    prs = Presentation()
    layout = prs.slide_layouts[1]  # title and content
    for title, bullets, notes in slides:
        slide = prs.slides.add_slide(layout)
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        for k, line in enumerate(bullets):
            para = body.paragraphs[0] if k == 0 else body.add_paragraph()
            para.text = line
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    prs.save(str(path))
    return path


def make_encrypted_pdf(path: Path, source: Path) -> Path:
    """``source`` encrypted with a user password (pypdf)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(source)))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def big_pdf(path: Path, n_pages: int, seed: int = 0) -> Path:
    """A report of ``n_pages`` pages of about 450 words each, in six paragraphs."""
    rng = random.Random(seed)
    return make_pdf(path, [[filler(rng, 75) for _ in range(6)] for _ in range(n_pages)])


def make_pdf_bomb(path: Path, stream_mb: int) -> Path:
    """A one-page PDF of well under a megabyte whose content stream inflates to ``stream_mb`` MB
    (what a reader holds in memory to draw or read the page). Written by hand: no library makes one."""
    import zlib

    stream = zlib.compress(b"BT /F1 12 Tf 72 712 Td (bomb) Tj ET\n" + b" " * (stream_mb * 1024 * 1024), 9)
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def make_docx_bomb(path: Path, xml_mb: int) -> Path:
    """A DOCX of a few hundred KB whose document part inflates to ``xml_mb`` MB of XML."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr(
            "word/document.xml",
            b"<w:document><w:body>" + b"<w:p/>" * (xml_mb * 1024 * 1024 // 6) + b"</w:body></w:document>",
        )
    return path
