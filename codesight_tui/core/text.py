"""Identifier splitting and FTS5 query building, shared by the indexer and the searcher so that
``parseConfigFile``, ``parse_config_file`` and "parse config file" meet in the same terms."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_WORD = re.compile(r"\w+", re.UNICODE)

# Common English function words. They match nearly every chunk, so they only add noise to BM25.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "else",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "ones",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "via",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)


@lru_cache(maxsize=200_000)
def _split_cached(word: str) -> tuple[str, ...]:
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _PARTS.findall(piece))
    return tuple(parts)


def split_identifier(word: str) -> list[str]:
    """``parseConfigFile`` / ``parse_config_file`` / ``HTTPServer2`` -> lower-case parts."""
    return list(_split_cached(word))


# An identifier of more than one part has an upper-case letter, a digit or an underscore after its
# first character, so plain words ("return", "Self") are never even extracted. The look-behind
# starts a match only where the identifier starts (a digit may precede it: "2fooBar" holds
# "fooBar"), which keeps the scan linear on long plain words.
try:  # possessive quantifiers (Python 3.11+) never backtrack, which scans about 15% faster
    _COMPOUND = re.compile(r"(?<![A-Za-z_])[A-Za-z_][a-z]*+[A-Z0-9_][A-Za-z0-9_]*+")
except re.error:  # Python 3.10: the same matches, with backtracking that can never succeed
    _COMPOUND = re.compile(r"(?<![A-Za-z_])[A-Za-z_][a-z]*[A-Z0-9_][A-Za-z0-9_]*")
_EXPANSIONS: dict[str, tuple[str, ...]] = {}


def _with_words(m: re.Match[str]) -> str:
    parts = _split_cached(m.group(0))
    return f"{m.group(0)} ({' '.join(parts)})" if len(parts) > 1 else m.group(0)


def spell_out_names(text: str) -> str:
    """Each compound identifier in ``text`` followed by its words:
    ``method _checkForConflicts`` -> ``method _checkForConflicts (check for conflicts)``."""
    return _COMPOUND.sub(_with_words, text)


def expansion_terms(text: str) -> str:
    """Extra index terms for compound identifiers: their parts and their joined form.

    The FTS tokenizer already splits on ``_`` but keeps ``parseConfigFile`` whole; adding both
    the parts and the joined form makes every spelling of a name match every other.
    """
    out: list[str] = []
    # In order of first use, not a set's: the order decides which parts stand next to each other,
    # and so which phrases match ("basic_json" is the phrase "basic json"). A set's order changes
    # with each process's hash seed, and so did BM25's answers after a rebuild.
    for ident in dict.fromkeys(_COMPOUND.findall(text)):
        terms = _EXPANSIONS.get(ident)
        if terms is None:
            parts = _split_cached(ident)
            terms = (*parts, "".join(parts)) if len(parts) > 1 else ()
            if len(_EXPANSIONS) >= 200_000:
                _EXPANSIONS.clear()
            _EXPANSIONS[ident] = terms
        out.extend(terms)
    return " ".join(dict.fromkeys(out))


def query_terms(query: str) -> list[str]:
    """The distinct lower-case terms of a free-text query, identifiers expanded, stopwords dropped
    (unless the query is nothing but stopwords)."""
    terms: list[str] = []
    for word in _WORD.findall(query):
        cands = [word.lower()]
        parts = split_identifier(word) if word.isascii() else []
        if len(parts) > 1:
            cands += parts + ["".join(parts)]
        for t in cands:
            if t and t not in terms:
                terms.append(t)
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


# What os.fsdecode (file names, argv) makes of bytes that are not UTF-8: lone surrogates, which
# neither the tokenizer nor SQLite accepts.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


FTS_MAX_TERMS = 64  # terms of a query that BM25 searches for


def fts_query(query: str) -> str | None:
    """A safe FTS5 MATCH expression (OR of quoted terms) for any input, or None if it has no words.

    Every term is double-quoted, so FTS5 operators typed by the user (``AND``, ``NEAR``, ``*``,
    ``-``, ``:``, parentheses) are searched as words and never parsed as syntax.
    """
    return fts_match(fts_terms(query))


def fts_terms(query: str) -> list[str]:
    """The terms BM25 searches for: ``query_terms``, the first ``FTS_MAX_TERMS``."""
    return query_terms(query)[:FTS_MAX_TERMS]


def fts_match(terms: list[str]) -> str | None:
    """The MATCH expression of ``fts_terms``: each term quoted, joined by OR (None for none)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) if terms else None


def content_hash(text: str) -> str:
    """``sha256(text)[:16]``: the identity of a chunk's content."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


# C0 controls but tab and newline, DEL, and C1 controls (whose 0x9b is CSI and 0x9d OSC on some
# terminals): an escape sequence in a file, a file name or an LLM's answer must never drive the
# user's terminal (OSC 52 writes its clipboard, OSC 0 its title, OSC 8 makes links).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as ``?``: what the CLI,
    the TUI and ``ask`` put on a terminal."""
    return _CONTROL.sub("?", text)
