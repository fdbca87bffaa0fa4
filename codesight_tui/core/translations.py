"""Translated documentation (issue 66): the same page under sibling trees that differ only in a
language code (``docs/en/docs/x.md``, ``docs/ja/docs/x.md``, ``docs/zh-hant/docs/x.md``, or
``docs/x.md`` beside ``docs/de/x.md``) is one result, shown in the reader's language (``$LANG``,
else English, else the tree without a code) with a count of the others.

Only prose is folded (Markdown, reStructuredText, plain text, HTML, AsciiDoc): code is not
translated, and a code folder named ``it`` or ``id`` is not a language. The codes are ISO 639-1's,
with an optional region or script (``pt-BR``, ``zh_Hant``).
"""

from __future__ import annotations

import os
import re

# ISO 639-1: every two-letter language code.
ISO_639_1 = frozenset(
    [
        "aa",
        "ab",
        "ae",
        "af",
        "ak",
        "am",
        "an",
        "ar",
        "as",
        "av",
        "ay",
        "az",
        "ba",
        "be",
        "bg",
        "bh",
        "bi",
        "bm",
        "bn",
        "bo",
        "br",
        "bs",
        "ca",
        "ce",
        "ch",
        "co",
        "cr",
        "cs",
        "cu",
        "cv",
        "cy",
        "da",
        "de",
        "dv",
        "dz",
        "ee",
        "el",
        "en",
        "eo",
        "es",
        "et",
        "eu",
        "fa",
        "ff",
        "fi",
        "fj",
        "fo",
        "fr",
        "fy",
        "ga",
        "gd",
        "gl",
        "gn",
        "gu",
        "gv",
        "ha",
        "he",
        "hi",
        "ho",
        "hr",
        "ht",
        "hu",
        "hy",
        "hz",
        "ia",
        "id",
        "ie",
        "ig",
        "ii",
        "ik",
        "io",
        "is",
        "it",
        "iu",
        "ja",
        "jv",
        "ka",
        "kg",
        "ki",
        "kj",
        "kk",
        "kl",
        "km",
        "kn",
        "ko",
        "kr",
        "ks",
        "ku",
        "kv",
        "kw",
        "ky",
        "la",
        "lb",
        "lg",
        "li",
        "ln",
        "lo",
        "lt",
        "lu",
        "lv",
        "mg",
        "mh",
        "mi",
        "mk",
        "ml",
        "mn",
        "mr",
        "ms",
        "mt",
        "my",
        "na",
        "nb",
        "nd",
        "ne",
        "ng",
        "nl",
        "nn",
        "no",
        "nr",
        "nv",
        "ny",
        "oc",
        "oj",
        "om",
        "or",
        "os",
        "pa",
        "pi",
        "pl",
        "ps",
        "pt",
        "qu",
        "rm",
        "rn",
        "ro",
        "ru",
        "rw",
        "sa",
        "sc",
        "sd",
        "se",
        "sg",
        "si",
        "sk",
        "sl",
        "sm",
        "sn",
        "so",
        "sq",
        "sr",
        "ss",
        "st",
        "su",
        "sv",
        "sw",
        "ta",
        "te",
        "tg",
        "th",
        "ti",
        "tk",
        "tl",
        "tn",
        "to",
        "tr",
        "ts",
        "tt",
        "tw",
        "ty",
        "ug",
        "uk",
        "ur",
        "uz",
        "ve",
        "vi",
        "vo",
        "wa",
        "wo",
        "xh",
        "yi",
        "yo",
        "za",
        "zh",
        "zu",
    ]
)
PROSE = frozenset({"markdown", "rst", "text", "html", "asciidoc", "org"})
_CODE = re.compile(r"([a-z]{2})(?:[-_]([A-Za-z0-9]{2,4}))?", re.IGNORECASE)


def language_segment(path: str) -> tuple[str, str] | None:
    """``(the path without its language folder, the code)`` where a folder of ``path`` (not its
    file name) is a language code; None otherwise. ``docs/ja/docs/x.md`` -> ``("docs/docs/x.md",
    "ja")``."""
    parts = path.split("/")
    for k, part in enumerate(parts[:-1]):
        m = _CODE.fullmatch(part)
        if m and m.group(1).lower() in ISO_639_1:
            code = m.group(1).lower() + (f"-{m.group(2).lower()}" if m.group(2) else "")
            return "/".join(parts[:k] + parts[k + 1 :]), code
    return None


def preferred_language(environ: dict[str, str] | None = None) -> str:
    """The reader's language, from ``LC_ALL``, ``LC_MESSAGES`` or ``LANG`` (``de_DE.UTF-8`` ->
    ``de``); English where none says one (``C``, ``POSIX``)."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var, "")
        code = value.split(".")[0].split("_")[0].split("-")[0].lower()
        if code in ISO_639_1:
            return code
    return "en"


def preference(code: str, preferred: str) -> int:
    """Lower is better: the reader's language, then English or the tree without a code, then any."""
    base = code.split("-")[0]
    if base == preferred:
        return 0
    return 1 if base in ("en", "") else 2


PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".html", ".htm", ".org")


def later(path: str, preferred: str) -> bool:
    """Whether ``path`` is a translation into another language than the reader's: indexed after
    the rest, so that a first index's first answers are not all German pages (its walk reaches
    ``docs/de`` before ``docs/en``)."""
    if not path.lower().endswith(PROSE_SUFFIXES):
        return False
    found = language_segment(path)
    return found is not None and preference(found[1], preferred) > 0 and not found[1].startswith("en")
