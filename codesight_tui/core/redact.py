"""Secrets stay out of the index: files named like secrets are never read, and a private key or a
token of a known format inside any other file is masked before the text is chunked.

What a file is called decides first (``SECRET_FILES``, gitignore-style, the ``secret_files``
setting): ``.env``, keys, ``.npmrc``, ``credentials.json``, ``.ssh/``. Then ``redact()`` scans the
text for private-key blocks and for the token formats that providers publish, and replaces each
with a marker of the same kind, line for line, so the file stays searchable by everything else and
no line number moves. ``flagged()`` is the same scan as a yes/no, for ``ask``: a chunk from an index
built before this module is never sent to an LLM if it holds one.

The patterns are the ones secret scanners agree on (detect-secrets' plugins, gitleaks' rules):
fixed prefixes with fixed lengths or alphabets, so that they almost never fire on code. There is no
entropy or keyword rule: ``password = get_password()`` is code, and high-entropy strings are
hashes and test vectors far more often than secrets. Each pattern runs only where its literal
prefix occurs in the text, which keeps the scan off the lexical phase's clock
(``benchmarks/bench_redact.py``: 60 times faster than detect-secrets' own scan).
"""

from __future__ import annotations

import re
from functools import lru_cache

import pathspec

# Files whose whole content is a secret, or usually holds one: never read. Templates that are
# committed to be copied (``.env.example``) hold no values and stay searchable; a real token in one
# is still masked by the content scan.
SECRET_FILES: tuple[str, ...] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "!.env.dist",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "!*.pub",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    "credentials*.json",
    "client_secret*.json",
    "service-account*.json",
    "*.tfstate",
    "*.tfstate.backup",
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".docker/config.json",
    ".kube/config",
    # password hashes (``codesight --path /etc`` as root): the files, not a folder so named
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "master.passwd",
    "!shadow/",
    "!gshadow/",
)

# A private key block, from its BEGIN line to its END line (or to the end of the text).
_KEY_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")
_KEY_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")

MARK = "[redacted {kind}]"
# (kind, pattern). Each pattern starts with a literal, never with ``\b`` or a class, so that the
# regex engine finds candidates with its fast literal-prefix scan (a leading ``\b`` made the
# twenty patterns scan at 9 MB/s); that a match starts a word is checked on the match itself.
_TOKENS: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    # an AWS secret key has no prefix of its own: "secret" in a name near "aws", then 40 characters
    ("aws-secret-key", r"secret[\w.-]{0,20}?[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ("aws-secret-key", r"Secret[\w.-]{0,20}?[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ("aws-secret-key", r"SECRET[\w.-]{0,20}?[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36}\b"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{82}\b"),
    ("gitlab-token", r"glpat-[A-Za-z0-9_-]{20}\b"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,72}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]{8,}/B[A-Za-z0-9_]{8,}/[A-Za-z0-9_]{20,}"),
    ("stripe-key", r"_live_[A-Za-z0-9]{20,99}\b"),  # after "sk" or "rk"
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"),
    ("anthropic-key", r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}\b"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    ("twilio-key", r"SK[0-9a-f]{32}\b"),
    ("telegram-token", r":AA[A-Za-z0-9_-]{32,33}\b"),
    ("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{86}=="),
    ("jwt", r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
)
_COMPILED = tuple((kind, re.compile(p)) for kind, p in _TOKENS)
_WORD = re.compile(r"\w")
# A Telegram bot token's digits come before its ":AA" (and a Mailchimp key's hex before "-us"):
# checked backwards from the literal.
_TELEGRAM_ID = re.compile(r"(?<![\w])\d{8,10}$")
_MAILCHIMP = re.compile(r"-us[0-9]{1,2}\b")
_HEX32 = re.compile(r"(?<![\w])[0-9a-f]{32}$")


def _tokens(text: str) -> tuple[str, int]:
    found = 0
    for kind, pattern in _COMPILED:
        out: list[str] = []
        last = 0
        for m in pattern.finditer(text):
            start = m.start()
            if kind == "telegram-token":
                head = _TELEGRAM_ID.search(text, max(0, start - 10), start)
                if head is None:
                    continue
                start = head.start()
            elif kind == "stripe-key":
                if text[max(0, start - 2) : start] not in ("sk", "rk"):
                    continue
                start -= 2
            elif kind == "aws-secret-key":
                # the value only; "aws" must be part of the name, just before "secret"
                if "aws" not in text[max(0, start - 24) : start].lower():
                    continue
                out += [text[last : m.end() - 40], MARK.format(kind=kind)]
                last = m.end()
                found += 1
                continue
            if start and _WORD.match(text, start - 1):
                continue  # inside a longer word: not a token's start
            out += [text[last:start], MARK.format(kind=kind)]
            last = m.end()
            found += 1
        if out:
            text = "".join(out) + text[last:]
    spans = []
    for m in _MAILCHIMP.finditer(text):
        head = _HEX32.search(text, max(0, m.start() - 32), m.start())
        if head is not None:
            spans.append((head.start(), m.end()))
    for start, end in reversed(spans):
        text = text[:start] + MARK.format(kind="mailchimp-key") + text[end:]
    return text, found + len(spans)


# A password in a URL (``postgres://user:s3cret@db``): found from each "://", the scheme before it.
_URL_AUTH = re.compile(r"://([^\s:/@\"'<>]{1,64}):([^\s:/@\"'<>$]{3,64})@([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])")

# Placeholders in examples and docs are not secrets: a URL's password made of these, equal to its
# user name, or for a local or example host, is left alone (Rails' templates, ORM docs).
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?\w+\}?|%\(?\w+\)?s?|\{\{?\s*[\w.]+\s*\}?\}|<\w+>|\*+|x+|pass(?:word)?|pwd"
    r"|secret|changeme|example|test|guest|root|admin|postgres|mypass\w*|your[_-]?\w*)$",
    re.IGNORECASE,
)
_EXAMPLE_HOST = re.compile(
    r"^(?:localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0|(?:[\w-]+\.)*example\.(?:com|org|net))$", re.IGNORECASE
)


def _url_passwords(text: str) -> list[tuple[int, int]]:
    """Spans of real-looking passwords in URLs."""
    spans = []
    i = text.find("://")
    while i != -1:
        m = _URL_AUTH.match(text, i)
        if m and not (_PLACEHOLDER.match(m.group(2)) or m.group(2) == m.group(1) or _EXAMPLE_HOST.match(m.group(3))):
            spans.append(m.span(2))
        i = text.find("://", i + 3)
    return spans


def redact(text: str) -> tuple[str, int]:
    """``(text with every secret masked, how many were masked)``. A private key block becomes one
    marker line per line it had, a token becomes ``[redacted KIND]`` within its line."""
    found = 0
    if "PRIVATE KEY" in text:
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            if _KEY_BEGIN.search(lines[i]):
                j = i
                while j < len(lines) and not _KEY_END.search(lines[j]):
                    j += 1
                for k in range(i, min(j, len(lines) - 1) + 1):
                    lines[k] = MARK.format(kind="private key")
                found += 1
                i = j + 1
            else:
                i += 1
        text = "\n".join(lines)
    text, n = _tokens(text)
    found += n
    if "://" in text:
        spans = _url_passwords(text)
        for start, end in reversed(spans):
            text = text[:start] + MARK.format(kind="password") + text[end:]
        found += len(spans)
    return text, found


def flagged(text: str) -> bool:
    """Whether ``text`` holds a private key or a token of a known format (``redact`` would mask it)."""
    return redact(text)[1] > 0


@lru_cache(maxsize=16)
def _spec(patterns: tuple[str, ...]) -> tuple[pathspec.GitIgnoreSpec, re.Pattern[str] | None]:
    """The spec, and one regex of all its including patterns: a path none of them matches (nearly
    every path) is not a secret whatever the negations say, and one search tells (a spec tries its
    patterns one by one: 40 us a path, which a branch switch of 3,000 files felt)."""
    spec = pathspec.GitIgnoreSpec.from_lines(list(patterns))
    including = [
        regex.pattern.replace("(?P<ps_d>/)", "(?:/)")
        for p in spec.patterns
        if p.include and (regex := getattr(p, "regex", None)) is not None
    ]
    try:
        quick = re.compile("|".join(f"(?:{x})" for x in including)) if including else None
    except re.error:  # a pattern this version of pathspec writes otherwise: the spec alone decides
        quick = None
    return spec, quick


def secret_name(rel_path: str, patterns: tuple[str, ...] | list[str] = SECRET_FILES, is_dir: bool = False) -> bool:
    """Whether a path is named like a secret under ``patterns`` (gitignore-style; a directory
    pattern such as ``.ssh/`` covers everything below it)."""
    if not patterns:
        return False
    probe = rel_path + "/" if is_dir else rel_path
    spec, quick = _spec(tuple(patterns))
    if quick is not None and quick.search(probe) is None:
        return False
    return spec.match_file(probe)


# A URL's user information (``https://user:TOKEN@host``) and its query parameters that carry
# credentials (``?access_token=...``, a presigned ``X-Amz-Signature``): what a fleet source,
# a log line or an error message may hold and must not keep.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s'\"<>]*)@")
_URL_SECRET_PARAM = re.compile(
    r"(?i)([?&;][a-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|key|signature|sig|credential|auth)[a-z0-9_.-]*=)"
    r"[^&#\s'\"<>]+"
)


def scrub_credentials(text: str) -> str:
    """``text`` with every URL's credentials taken out: the user information of an ``https://``
    (or any other) URL, the password of an ``ssh://`` one (its login name is no secret), and the
    values of query parameters named like a token, key, signature or password (``***``)."""

    def userinfo(m: re.Match[str]) -> str:
        scheme, info = m.group(1), m.group(2)
        if "ssh" in scheme.lower() and ":" not in info:
            return m.group(0)
        if "ssh" in scheme.lower():
            return f"{scheme}{info.split(':', 1)[0]}@"
        return scheme

    if "://" not in text and "=" not in text:
        return text
    return _URL_SECRET_PARAM.sub(r"\1***", _URL_USERINFO.sub(userinfo, text))
