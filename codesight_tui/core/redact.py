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
hashes and test vectors far more often than secrets. One combined regex with a cheap pre-filter
keeps the scan at a few hundred MB/s (``benchmarks/bench_redact.py``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import pathspec

# Files whose whole content is a secret, or usually holds one: never read. Templates that are
# committed to be copied (``.env.example``) hold no values and stay searchable; a real token in one
# is still masked by the content scan.
SECRET_FILES: tuple[str, ...] = (
    ".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template", "!.env.dist", "*.env",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.gpg", "*.asc",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "!*.pub",
    ".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".htpasswd",
    "credentials*.json", "client_secret*.json", "service-account*.json", "*.tfstate", "*.tfstate.backup",
    ".ssh/", ".gnupg/", ".aws/", ".docker/config.json", ".kube/config",
)

# A private key block, from its BEGIN line to its END line (or to the end of the text).
_KEY_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")
_KEY_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")

# (kind, pattern). Each starts with a literal prefix, so a text without any prefix is not scanned.
_TOKENS: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("aws-secret-key", r"(?i:aws)[\w.-]{0,20}?(?i:secret)[\w.-]{0,20}?[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{82}\b"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20}\b"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,72}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]{8,}/B[A-Za-z0-9_]{8,}/[A-Za-z0-9_]{20,}"),
    ("stripe-key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,99}\b"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"),
    ("anthropic-key", r"\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    ("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    ("twilio-key", r"\bSK[0-9a-f]{32}\b"),
    ("mailchimp-key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    ("telegram-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{32,33}\b"),
    ("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{86}=="),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("url-password", r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,64}:[^\s:/@\"'<>$]{3,64}@[A-Za-z0-9.-]+"),
)
_TOKEN = re.compile("|".join(f"(?P<t{i}>{p})" for i, (_, p) in enumerate(_TOKENS)))
_KINDS = {f"t{i}": kind for i, (kind, _) in enumerate(_TOKENS)}
# Literals one of which every match contains: most texts have none, and skip the big regex.
_PREFILTER = re.compile(r"AKIA|ASIA|ABIA|ACCA|A3T|(?i:aws)|gh[pousr]_|github_pat_|glpat-|xox|hooks\.slack|_live_"
                        r"|T3BlbkFJ|sk-ant-|AIza|npm_|pypi-|SG\.|SK[0-9a-f]|-us\d|:AA"
                        r"|AccountKey=|eyJ|://[^\s/@]+:[^\s/@]+@|PRIVATE KEY")

MARK = "[redacted {kind}]"
# Placeholders in examples and docs are not secrets: a URL's password made of these is left alone.
_PLACEHOLDER = re.compile(r"^(?:\$\{?\w+\}?|%\(?\w+\)?s?|\{\{?\s*\w+\s*\}?\}|<\w+>|\*+|x+|password|pass|pwd"
                          r"|secret|changeme|example|your[_-]?\w*)$", re.IGNORECASE)


def _mask(m: re.Match) -> str:
    kind = _KINDS[m.lastgroup or ""]
    if kind == "url-password":
        scheme_user, _, rest = m.group().rpartition("@")
        user, _, password = scheme_user.rpartition(":")
        if _PLACEHOLDER.match(password):
            return m.group()
        return f"{user}:{MARK.format(kind='password')}@{rest}"
    return MARK.format(kind=kind)


def redact(text: str) -> tuple[str, int]:
    """``(text with every secret masked, how many were masked)``. A private key block becomes one
    marker line per line it had, a token becomes ``[redacted KIND]`` within its line."""
    if not _PREFILTER.search(text):
        return text, 0
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
    masked = [0]

    def count(m: re.Match) -> str:
        out = _mask(m)
        masked[0] += out != m.group()
        return out

    text = _TOKEN.sub(count, text)
    return text, found + masked[0]


def flagged(text: str) -> bool:
    """Whether ``text`` holds a private key or a token of a known format (``redact`` would mask it)."""
    return redact(text)[1] > 0


@lru_cache(maxsize=16)
def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


def secret_name(rel_path: str, patterns: tuple[str, ...] | list[str] = SECRET_FILES, is_dir: bool = False) -> bool:
    """Whether a path is named like a secret under ``patterns`` (gitignore-style; a directory
    pattern such as ``.ssh/`` covers everything below it)."""
    if not patterns:
        return False
    probe = rel_path + "/" if is_dir else rel_path
    return _spec(tuple(patterns)).match_file(probe)
