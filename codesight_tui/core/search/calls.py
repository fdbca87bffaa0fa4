"""What a call site says about what it calls (issue 66): a bare name, a call through ``self``, or a
call through another receiver, read off the call's line; and the names each language calls without
defining them (its built-ins).

``navigate.Resolver`` uses it to stay honest: a bare name never resolves to a method in a language
whose methods are called through a receiver (Python, JavaScript, Go, Rust, ...), a call through
``self`` resolves only within the caller's class, a call through a value whose type the index does
not know (``self._environ.get(...)``) is never "resolved", and a bare ``append`` in Go is the
built-in unless the file defines one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

# A bare call in these languages may call a method of the caller's own class (an implicit ``this``).
IMPLICIT_SELF = frozenset({"java", "kotlin", "csharp", "cpp", "scala", "swift", "ruby"})
SELF_NAMES = frozenset({"self", "this", "cls", "Self", "super", "base", "me"})
# Kinds of definitions whose functions are methods (called through a receiver or a type).
CLASS_KINDS = frozenset(
    {
        "class",
        "struct",
        "interface",
        "trait",
        "impl",
        "enum",
        "record",
        "object",
        "protocol",
        "extension",
        "type",
        "@interface",
        "union",
        "actor",
    }
)

_GO = (
    "append cap clear close complex copy delete imag len make max min new panic print println real recover "
    "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 "
    "uint16 uint32 uint64 uintptr any"
)
_PYTHON = (
    "abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile "
    "complex delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals "
    "hasattr hash help hex id input int isinstance issubclass iter len list locals map max memoryview min "
    "next object oct open ord pow print property quit range repr reversed round set setattr slice sorted "
    "staticmethod str sum super tuple type vars zip __import__"
)
_JS = (
    "parseInt parseFloat isNaN isFinite decodeURI decodeURIComponent encodeURI encodeURIComponent escape "
    "unescape eval setTimeout setInterval setImmediate clearTimeout clearInterval clearImmediate "
    "queueMicrotask structuredClone require fetch alert String Number Boolean Array Object Symbol BigInt "
    "Promise Date RegExp Error TypeError RangeError SyntaxError Map Set WeakMap WeakSet Proxy"
)
_RUST = "Some Ok Err Box Vec String drop panic Option Result Default"
_KOTLIN = (
    "println print listOf mutableListOf mapOf mutableMapOf setOf mutableSetOf arrayOf emptyList emptyMap "
    "emptySet require requireNotNull check checkNotNull error TODO lazy repeat run let also apply with "
    "takeIf buildString buildList sequenceOf"
)
_RUBY = (
    "puts print p pp require require_relative raise loop lambda proc attr_accessor attr_reader "
    "attr_writer include extend format sprintf rand sleep catch throw fail Integer Float String Array Hash"
)
_LUA = (
    "print pairs ipairs tostring tonumber type error assert require pcall xpcall select setmetatable "
    "getmetatable next rawget rawset rawequal rawlen unpack load loadfile dofile collectgarbage"
)
_PHP = (
    "count strlen array_map array_filter array_keys array_values array_merge in_array isset empty "
    "is_array is_string is_int implode explode sprintf printf trim json_encode json_decode"
)
BUILTINS: dict[str, frozenset[str]] = {
    "go": frozenset(_GO.split()),
    "python": frozenset(_PYTHON.split()),
    "javascript": frozenset(_JS.split()),
    "typescript": frozenset(_JS.split()),
    "tsx": frozenset(_JS.split()),
    "rust": frozenset(_RUST.split()),
    "kotlin": frozenset(_KOTLIN.split()),
    "ruby": frozenset(_RUBY.split()),
    "lua": frozenset(_LUA.split()),
    "php": frozenset(_PHP.split()),
}

_MEMBER = re.compile(r"(?:\?\.|!\.|\.|->|::)\s*$")  # what puts a name after a receiver
_RECEIVER = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\?\.|!\.|\.|->|::)\s*$")
_DECLARES = re.compile(r"(?:\bdef|\bfunc|\bfunction|\bfn|\bfun|\bsub|\bclass|\bstruct|\binterface)\s*$")
_GO_RECEIVER = re.compile(r"\bfunc\s*\(\s*([A-Za-z_]\w*)\s+\*?\s*([A-Za-z_]\w*)")


@dataclass(frozen=True, slots=True)
class CallForm:
    """How a call names what it calls: ``bare`` (``f(x)``), ``self`` (``self.f(x)``, ``this.f()``,
    a Go method's own receiver), ``member`` (``obj.f()``: ``receiver`` its name where it is one
    plain name, else ""), or ``unknown`` (the line does not show it: a call split over lines)."""

    kind: str
    receiver: str = ""
    chain: str = ""  # a receiver that is a chain of plain names (``t.history`` in ``t.history.append()``)


UNKNOWN = CallForm("unknown")


@lru_cache(maxsize=1024)
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


def call_form(text: str, name: str, own_receiver: str = "") -> CallForm:
    """The form of the calls of ``name`` on one line of code (``own_receiver``: the variable a Go
    method's receiver is bound to, which is its ``self``). Where the line's uses of the name
    disagree (``append(h.append(x))``), or none shows a receiver or a bare call, it is ``UNKNOWN``."""
    forms: set[CallForm] = set()
    for m in _word(name).finditer(text):
        before = text[: m.start()]
        if before[-1:] in ("'", '"') and text[m.end() : m.end() + 1] == before[-1]:
            continue  # kw["exc_info"]: a string that spells it
        if _DECLARES.search(before):
            continue  # the definition's own name on its line
        rest = text[m.end() :].lstrip()
        if rest[:1] == "=" and rest[:2] != "==":
            continue  # assigned, not called
        if not _MEMBER.search(before):
            forms.add(CallForm("bare"))
            continue
        if _SUPER.search(before):
            forms.add(CallForm("super"))
            continue
        found = _RECEIVER.search(before)
        if found is None:  # Schema().load(), cl.lastChunk().IsFull(): a chain that ends in a call
            chained = _CHAIN.search(before)
            forms.add(CallForm("member", "", _chain(chained.group(1)) if chained else ""))
            continue
        receiver = found.group(1)
        if _MEMBER.search(before[: found.start()]):  # a.b.f(): the receiver is a value; its chain, where plain
            chained = _CHAIN.search(before)
            forms.add(CallForm("member", "", _chain(chained.group(1)) if chained else ""))
        elif receiver in SELF_NAMES or (own_receiver and receiver == own_receiver):
            forms.add(CallForm("self", receiver))
        else:
            forms.add(CallForm("member", receiver))
    return forms.pop() if len(forms) == 1 else UNKNOWN


# A receiver chain of plain names and calls with plain arguments (``t.history``, ``tui.Start``,
# ``Schema(many=True)``, ``cl.lastChunk()``), up to eight parts; a call's arguments are dropped.
_LINK = r"[A-Za-z_$][\w$]*(?:\s*\([^()]*\))?"
_CHAIN = re.compile(rf"(?<![\w$.)\]])((?:{_LINK}\s*\.\s*){{0,7}}{_LINK})\s*\.\s*$")


_CHAINED = rf"(?:{_LINK}\s*\.\s*){{1,7}}{_LINK}"


def _chain(text: str) -> str:
    """A chain as ``chain_type`` reads it: no spaces, each call's arguments dropped (``a.f()``)."""
    chain = re.sub(r"\s+", "", re.sub(r"\([^()]*\)", "()", text))
    return chain if "." in chain or chain.endswith("()") else ""


_SUPER = re.compile(r"\bsuper\s*\([^()]*\)\s*\.\s*$")  # super().f(), super(A, self).f()
_BASES_PY = re.compile(r"\bclass\s+[\w$]+\s*(?:\[[^\]]*\])?\s*\(([^)]*)\)")
_BASES_EXTENDS = re.compile(r"\bextends\s+([\w$.,\s<>]+?)(?:\{|$)")
_BASES_COLON = re.compile(r"\bclass\s+[\w$]+[^:{]*:\s*([\w$.,\s<>()]+?)(?:\{|$)")


_BASE_PATTERNS = {
    "python": (_BASES_PY,),
    "kotlin": (_BASES_COLON,),
    "swift": (_BASES_COLON,),
    "csharp": (_BASES_COLON,),
    "cpp": (_BASES_COLON,),
}


def bases_in(text: str, name: str, language: str | None = None) -> list[str]:
    """The base classes a class's definition line names (``class A(B, mod.C, metaclass=M):``,
    ``class A extends B implements C {``, ``class A : B(), C {``), each by its last name part."""
    found: list[str] = []
    text = re.sub(r"\bimplements\b", ", ", text) if language not in _BASE_PATTERNS else text
    for pattern in _BASE_PATTERNS.get(language or "", (_BASES_EXTENDS,)):
        for m in pattern.finditer(text):
            for part in m.group(1).split(","):
                part = re.sub(r"<[^<>]*>|\([^()]*\)", "", part).strip()
                if not part or "=" in part:
                    continue
                part = re.sub(r"^(?:public|private|protected|virtual)\s+", "", part)
                last = part.split(".")[-1].split()[-1] if part.split() else ""
                if re.fullmatch(r"[A-Za-z_$][\w$]*", last) and last != name and last not in found:
                    found.append(last)
        if found:
            break
    return found


_GO_TYPES = frozenset(_GO.split()) | {"map", "chan", "func", "struct", "interface"}  # no type of the repository


def _type(language: str | None) -> str:
    """A class's name as a pattern: a capital first (after underscores: ``_ClassBuilder``); in Go, any
    name (``terminal``, ``previewOpts``: a type's case says only whether it is exported)."""
    return r"[A-Za-z_][\w$]*" if language == "go" else r"_*[A-Z][\w$]*"


def _made(language: str | None) -> str:
    """What follows a class's name where a value of it is made: Go's ``T{...}`` (``T(x)`` is a
    call or a conversion), else ``T(...)`` or ``T{...}``."""
    return r"[{]" if language == "go" else r"[({]"


def _named(found: str, language: str | None) -> str:
    return "" if language == "go" and found in _GO_TYPES else found


# A Go type as a declaration writes it: `*Reader`, `util.Chars`, `[]Flag`, `map[string]*Command`.
_GO_SPEC = r"(?:\[\]|map\[[^\]]*\])?\s*\*?\s*(?:[\w$]+\.)?[A-Za-z_][\w$]*"


def _go_type(spec: str) -> str:
    """A Go type's name (``*util.Chars`` -> ``Chars``), ``[]`` before it for a slice or a map's
    values (what a range gives: ``[]Flag``); "" for a built-in type."""
    m = re.fullmatch(r"(\[\]|map\[[^\]]*\])?\s*\*?\s*(?:[\w$]+\.)?([A-Za-z_][\w$]*)", spec.strip())
    if m is None or m.group(2) in _GO_TYPES:
        return ""
    return ("[]" if m.group(1) else "") + m.group(2)


def typed_in(text: str, receiver: str, language: str | None = None) -> str:
    """The class ``receiver`` holds, where ``text`` (a function's lines up to a call) says so: the
    last constructor assigned to it or the annotation it was given; "" where nothing does. A call
    whose result it holds is ``call:NAME`` (``r := newReader()``; in Go also ``T(x)``, a conversion
    or a function: which, the definition says)."""
    r = re.escape(receiver)
    t = _type(language)
    go = language == "go"
    made = _made(language)
    patterns = [
        rf"(?<![\w$.]){r}\s*(?::\s*[\w$.\[\], ]+)?\s*:?=\s*(?:new\s+|&)?(?:[\w$]+\.)*({t})\s*{made}",
        # r: Reader (Python, TypeScript, Kotlin), closed as code closes it: not a docstring's "r: Structure to ..."
        rf"(?m)(?<![\w$.]){r}[ \t]*:[ \t]*(?:[\w$]+\.)*({t})[ \t]*(?=[,)=;{{]|$)",
        rf"(?<![\w$.]){r}\s+\*?(?:[\w$]+\.)*({t})\s*[,)]",  # Go's parameters: r *Reader
        rf"\b({t})(?:<[^<>]*>)?\s+{r}\s*[=;,)]",  # Java, C#: Reader r = ..., (Reader r)
    ]
    if go:  # `name: value` is a composite literal's field, `Reader r` is no Go
        patterns = [
            patterns[0],
            rf"(?<![\w$.]){r}\s+({_GO_SPEC})\s*[,)]",  # parameters: r *Reader, flags []Flag
            rf"\bvar\s+{r}\s+({_GO_SPEC})\b",  # var r Reader
            rf"(?<![\w$.]){r}\s*(?:,\s*[\w$]+\s*)?:?=\s*[\w$.]+\.\(\s*\*?(?:[\w$]+\.)?({t})\s*\)",  # f.(Flag)
        ]
    best, at = "", -1
    for pattern in patterns:
        for m in re.finditer(pattern, text):
            if m.start() > at and (found := _go_type(m.group(1)) if go else m.group(1)):
                best, at = found, m.start()
    if go:  # for _, f := range flags {: an element of what it ranges over
        for m in re.finditer(rf"\bfor\s+[\w$]+\s*,\s*{r}\s*:?=\s*range\s+&?({_CHAINED}|[\w$]+)\s*\{{", text):
            if m.start() > at:
                best, at = "range:" + (_chain(m.group(1)) or m.group(1)), m.start()
    # shape := w.border.shape, r := t.reader(): the class at the chain's end (``chain_type``)
    for m in re.finditer(rf"(?m)(?<![\w$.]){r}\s*:?=\s*&?({_CHAINED})\s*(?:$|;|//|#)", text):
        if m.start() > at and (chained := _chain(m.group(1))):
            best, at = "chain:" + chained, m.start()
    # r := newReader(...), r = make_reader(...): what that function returns (``returned_by``)
    called = r"[A-Za-z_][\w$]*" if go else r"[a-z_][\w$]*"
    for m in re.finditer(rf"(?<![\w$.]){r}\s*(?:,\s*[\w$]+\s*)?:?=\s*((?:[\w$]+\.)?{called})\s*\(", text):
        if m.start() > at and _named(m.group(1).rsplit(".", 1)[-1], language):
            best, at = "call:" + m.group(1), m.start()  # call:NAME, call:PACKAGE.NAME
    return best


_RETURNS = (
    re.compile(r"->\s*['\"]?(?:[\w$]+\.)*(_*[A-Z][\w$]*)"),  # Python: -> Reader
    re.compile(r"\)\s*\(?\s*\*?(?:[\w$]+\.)?([A-Z][\w$]*)[\s,{]"),  # Go: ) *Reader {, ) (*Reader, error)
    re.compile(r"\)\s*:\s*(?:[\w$]+\.)*([A-Z][\w$]*)"),
)  # TypeScript, Kotlin: ): Reader
# Go: func (r *R) name[T any](params) *Result {: the first result's type, past the receiver and parameters
_GO_RESULT = re.compile(
    r"\bfunc\s*(?:\([^()]*\)\s*)?[\w$]+\s*(?:\[[^\]]*\])?\s*\((?:[^()]|\([^()]*\))*\)"
    rf"\s*\(?\s*({_GO_SPEC})\s*[,{{)]"
)


def returned_by(def_text: str, language: str | None = None) -> str:
    """The class a function's definition says it returns (``-> Reader``, ``) *Reader {``)."""
    if language == "go":
        m = _GO_RESULT.search(def_text)
        return _go_type(m.group(1)) if m else ""
    for pattern in _RETURNS:
        m = pattern.search(def_text)
        if m:
            return m.group(1)
    return ""


def returned_in(body: str, language: str | None = None) -> str:
    """The class a function's body returns a new one of, where every ``return`` that makes one
    names the same (``return LRUCache(10)``, ``return &Reader{...}``)."""
    t = _type(language)
    made = set(re.findall(rf"\breturn\s+(?:new\s+|&)?(?:[\w$]+\.)?({t})\s*{_made(language)}", body))
    return _named(made.pop(), language) if len(made) == 1 else ""


def field_type(class_text: str, field: str, language: str | None = None) -> str:
    """The class a field of a class or struct holds, where its definition says so: Go's
    ``history *History``, Python's ``self.history = History(...)`` or ``history: History``."""
    f = re.escape(field)
    said: set[str] = set()
    for pattern in (
        rf"(?m)^\s*{f}\s+({_GO_SPEC})[ \t]*(?:$|//|`)" if language == "go" else "",
        rf"(?m)^\s*{f}\s+\*?(?:\[\])?(?:[\w$]+\.)?([A-Z][\w$]*)\b" if language != "go" else "",
        rf"\bself\.{f}\s*(?::\s*[\w$.\[\]]+)?\s*=\s*(?:[\w$]+\.)*(_*[A-Z][\w$]*)\s*\(",
        rf"(?m)^\s*(?:self\.)?{f}\s*:\s*(?:[\w$]+\.)*(_*[A-Z][\w$]*)\b",
        rf"\bthis\.{f}\s*=\s*new\s+([A-Z][\w$]*)",
    ):
        if pattern:
            said.update(m.group(1) for m in re.finditer(pattern, class_text))
    said = {_go_type(n) if language == "go" else n for n in said} - {""}
    return said.pop() if len(said) == 1 else ""  # two classes (one a branch, one another): not known


def assigns(text: str, name: str) -> bool:
    """Whether ``text`` (a function's lines) binds ``name`` as a value: ``name = ...``,
    ``name := ...``, or a parameter in the definition's line (``def f(name, x)``)."""
    n = re.escape(name)
    for m in re.finditer(rf"(?<![\w$.]){n}[ \t]*(?::[ \t]*[^=\n]+)?[ \t]*:?=(?!=)", text):
        if not re.search(r"(?::|->)[ \t]*$", text[: m.start()]):  # x: C = ...: an annotation names C, binds x
            return True
    head = re.sub(r"^\s*func\s*\([^()]*\)", "func", text.split("\n", 1)[0])  # a Go method's receiver is no parameter
    opened = head.find("(")
    if opened < 0:
        return False
    depth, close = 0, len(head)
    for k in range(opened, len(head)):
        depth += {"(": 1, ")": -1}.get(head[k], 0)
        if depth == 0:
            close = k
            break
    # a parameter's name, not a package or module its type names (`eventBox *util.EventBox`)
    return re.search(rf"(?<![\w$.]){n}\b(?!\s*\.)", head[opened + 1 : close]) is not None


def go_receiver(def_line: str) -> tuple[str, str]:
    """``(variable, type)`` of a Go method's receiver, from its definition's line
    (``func (m *Matcher) scan()`` -> ``("m", "Matcher")``); empty where it is none."""
    m = _GO_RECEIVER.search(def_line)
    return (m.group(1), m.group(2)) if m else ("", "")


# Go's build constraints: which of a package's files the checker reads on this machine, as gopls
# does (`light_unix.go` beside `light_windows.go` define one method each; `go/types` names the first).
_UNIX_OS = "aix android darwin dragonfly freebsd hurd illumos ios linux netbsd openbsd solaris"
_UNIX = frozenset(_UNIX_OS.split())
_GOOS = frozenset((_UNIX_OS + " js nacl plan9 wasip1 windows zos").split())
_ARCHES = "386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 mips64le ppc ppc64 ppc64le"
_GOARCH = frozenset((_ARCHES + " riscv riscv64 s390 s390x sparc sparc64 wasm").split())


def go_host(system: str, machine: str) -> frozenset[str]:
    """The build tags true by default on a machine (``sys.platform``, ``platform.machine()``):
    its GOOS and GOARCH, ``unix`` where that holds, ``gc`` and ``cgo``."""
    goos = next((g for g in _GOOS if system.startswith(g)), "windows" if system in ("win32", "cygwin") else system)
    arch = {"x86_64": "amd64", "aarch64": "arm64", "i386": "386", "i686": "386"}.get(machine.lower(), machine.lower())
    return frozenset({goos, arch, "gc", "cgo"} | ({"unix"} if goos in _UNIX else set()))


def go_builds(path: str, head: str, tags: frozenset[str]) -> bool:
    """Whether Go builds the file at ``path`` (``head``: its lines up to ``package``) where ``tags``
    hold: its name's ``_GOOS``/``_GOARCH`` suffix and its ``//go:build`` line (``go1.N`` holds)."""
    parts = path.rsplit("/", 1)[-1].removesuffix(".go").split("_")
    if parts[-1] == "test":
        parts = parts[:-1]
    if len(parts) >= 3 and parts[-2] in _GOOS and parts[-1] in _GOARCH:
        if parts[-2] not in tags or parts[-1] not in tags:
            return False
    elif len(parts) >= 2 and (parts[-1] in _GOOS or parts[-1] in _GOARCH) and parts[-1] not in tags:
        return False
    m = re.search(r"(?m)^//go:build\s+(.+?)\s*$", head)
    if m is None:
        return True
    tokens = re.findall(r"\(|\)|!|&&|\|\||[\w.]+", m.group(1))
    at = 0

    def term() -> bool:
        nonlocal at
        token = tokens[at] if at < len(tokens) else ""
        at += 1
        if token == "!":
            return not term()
        if token == "(":
            value = either()
            at += 1  # ")"
            return value
        return token in tags or re.fullmatch(r"go1\.\d+", token) is not None

    def joined(op: str, inner: Callable[[], bool]) -> bool:
        nonlocal at
        value = inner()
        while at < len(tokens) and tokens[at] == op:
            at += 1
            right = inner()  # read whatever the value: the tokens go on after it
            value = (value and right) if op == "&&" else (value or right)
        return value

    def either() -> bool:
        return joined("||", lambda: joined("&&", term))

    return either()
