"""Real PDF, DOCX and PPTX files for tests and benchmarks, written with the libraries codesight
reads them with (pypdfium2, python-docx, python-pptx)."""

from __future__ import annotations

import ctypes
import random
import textwrap
from pathlib import Path

WORDS = ("the service retries each request with a backoff that doubles until the deadline passes while"
         " workers drain the queue and report progress to the scheduler which balances load across"
         " regions so that a failed node never loses an accepted job and every record is written"
         " once before the index is compacted").split()


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
