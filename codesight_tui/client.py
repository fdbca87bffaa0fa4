"""The ``codesight`` console script: a thin client of the warm service where that helps.

``codesight search`` and ``codesight related`` send their arguments to the user's service
(``codesight_tui.service``) over a Unix socket and print what it streams back: a fresh process
imports nothing but ``os``, ``sys`` and ``_socket`` here, and the service answers from
engines it keeps open. Where there is no service, or it answers wrongly or late, the command runs
in this process as before (``--verbose`` says why, once) and a service is started for the next
call. ``CODESIGHT_SERVICE=off`` (or ``service = "off"`` in the config) turns all of this off.

Every other command, and the terminal UI, goes straight to ``codesight_tui.cli``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys

TYPE_CHECKING = False  # typing itself is not imported: a served call stays light
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable
    from typing import Any

SERVED = ("search", "related", "grep", "def", "refs", "callers", "callees")
PROTOCOL = 3  # 3: the environment as a digest, never its values
CONNECT_TIMEOUT = 1.0  # seconds to connect and be accepted
SILENCE_TIMEOUT = 5.0  # seconds without a word (the service sends one every second while it works)
# Environment variables that change what a command does: a service started with other values
# (another data directory, another config) does not serve this client.
# AWS_, GOOGLE_ and AZURE_: a fleet store's credentials (core.fleet) are those of the client's shell.
_ENV_PREFIXES = (
    "CODESIGHT_",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "GIT_CONFIG_",
    "HOME",
    "AWS_",
    "GOOGLE_",
    "AZURE_",
)
_ENV_IGNORED = ("CODESIGHT_SERVICE", "CODESIGHT_SERVICE_IDLE_MINUTES", "CODESIGHT_PROGRESS")


def runtime_dir() -> str:
    """This user's directory for the service's socket, lock and log: ``$XDG_RUNTIME_DIR/codesight``
    where the runtime directory is the user's own, else ``/tmp/codesight-UID``. Created 0700; one
    that another user owns, or that others can enter, is refused (``PermissionError``)."""
    uid = os.getuid()
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        try:
            st = os.stat(base)
            if st.st_uid != uid or st.st_mode & 0o077:
                base = None
        except OSError:
            base = None
    path = os.path.join(base, "codesight") if base else os.path.join("/tmp", f"codesight-{uid}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        raise PermissionError(f"{path} is not this user's directory")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def install_key() -> str:
    """Which codesight this is: a service of another install or version does not serve it."""
    from codesight_tui import __version__

    return f"{__version__} {os.path.dirname(os.path.abspath(__file__))}"


def install_tag() -> str:
    """A short name for this install (FNV-1a of ``install_key``): each install has a service,
    socket, lock and log of its own, so two venvs used side by side never stop each other's."""
    h = 0xCBF29CE484222325
    for byte in install_key().encode("utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"[:12]


def service_file(suffix: str) -> str:
    """This install's ``service-TAG.sock``, ``.lock`` or ``.log`` in the runtime directory."""
    return os.path.join(runtime_dir(), f"service-{install_tag()}.{suffix}")


def socket_path() -> str:
    return service_file("sock")


def env_key() -> dict[str, str]:
    """What of this environment the service must share to answer for it (see ``_ENV_PREFIXES``)."""
    return {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) and k not in _ENV_IGNORED}


def env_digest(env: dict[str, str] | None = None) -> str:
    """A SHA-256 of ``env_key()``: what the client sends in its place. The service compares it with
    its own, so the values themselves (a fleet store's credentials among them) never cross the
    socket. (The C module: hashlib costs a served call milliseconds to import.)"""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # Python 3.12+
    except ImportError:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]

    items = sorted((env if env is not None else env_key()).items())
    return str(sha256(to_json(items).encode("utf-8", "surrogateescape")).hexdigest())


def enabled() -> bool:
    """The ``service`` setting: the environment first, then the config file (read only if it exists)."""
    value = os.environ.get("CODESIGHT_SERVICE")
    if value is None:
        explicit = os.environ.get("CODESIGHT_CONFIG")
        config = (
            os.path.expanduser(explicit)
            if explicit
            else os.path.join(
                os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "codesight", "config.toml"
            )
        )
        try:
            with open(config, "rb") as fh:
                try:
                    import tomllib
                except ImportError:  # Python 3.10: pydantic-settings brings tomli
                    import tomli as tomllib  # type: ignore[no-redef]

                value = str(tomllib.load(fh).get("service", "auto"))
        except (OSError, ValueError, ImportError):
            value = "auto"
    return value.strip().lower() not in ("off", "0", "false", "no")


class Unserved(Exception):
    """The service could not answer: the call runs in this process instead."""


def connect(timeout: float = CONNECT_TIMEOUT) -> _socket.socket:
    """A connected socket to this user's service; ``Unserved`` where there is none. (The C
    module: ``socket`` itself takes 7 ms to import, a quarter of a served call.)"""
    import _socket

    try:
        path = socket_path()
        st = os.lstat(path)
    except FileNotFoundError:
        raise Unserved("no service running") from None
    except OSError as exc:
        raise Unserved(f"no runtime directory ({exc})") from None
    uid = os.getuid()
    # Whatever answers here is trusted with the request: a link, or a socket of another user's
    # (planted in the runtime directory), is never connected to.
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
        raise Unserved(f"refused {path}: not a socket of this user's")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        peer = peer_uid(sock)
    except FileNotFoundError:
        sock.close()
        raise Unserved("no service running") from None
    except ConnectionRefusedError:
        sock.close()
        raise Unserved("a stale socket (the service is gone)") from None
    except OSError as exc:
        sock.close()
        raise Unserved(f"cannot reach the service ({exc.strerror or exc})") from None
    if peer is not None and peer != uid:
        sock.close()
        raise Unserved(f"refused {path}: the process listening there is another user's (uid {peer})")
    return sock


def peer_uid(sock: Any) -> int | None:
    """The user id of the process at the other end of a Unix socket, where the OS says it
    (Linux: ``SO_PEERCRED``, a ``struct ucred`` of pid, uid and gid)."""
    import _socket

    opt = getattr(_socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    creds = sock.getsockopt(_socket.SOL_SOCKET, opt, 12)
    return int.from_bytes(creds[4:8], sys.byteorder)


# JSON for the request, written here: the json module costs 17 ms to import (re, enum), more than
# half of a served call. Control characters and lone surrogates (a path that is not UTF-8) are
# escaped, so the service's json.loads gets back exactly these strings.
_ESCAPES = {i: f"\\u{i:04x}" for i in (*range(0x20), *range(0xD800, 0xE000))}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})
FRAME_KINDS = {b"o": "o", b"e": "e", b"k": "k", b"r": "rc", b"x": "refused", b"s": "status"}


def to_json(value: object) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(k)) + ":" + to_json(v) for k, v in value.items()) + "}"
    raise TypeError(f"not sent to the service: {type(value).__name__}")


def request(
    message: dict[str, Any], on_message: Callable[[dict[str, Any]], Any], *, silence: float = SILENCE_TIMEOUT
) -> dict[str, Any]:
    """Send one request (a JSON line) and hand each message of the answer to ``on_message`` until
    the last one, ``{"rc": n}``, which is returned. The answer is frames: a kind byte (``o``
    stdout, ``e`` stderr, ``k`` still working, ``s`` status as JSON, ``r`` the exit code, ``x``
    refused), a 4-byte big-endian length, and that many bytes of UTF-8. ``Unserved`` where the
    service cannot be reached, refuses, goes silent or says something else."""
    sock = connect()
    try:
        try:
            sock.sendall(to_json(message).encode() + b"\n")
        except OSError:
            pass  # a service that refused at once has closed its end: its reason is still there to read
        sock.settimeout(silence)
        buf = bytearray()  # appended to and taken from in place: an answer of megabytes is not copied per read
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                raise Unserved(f"the service said nothing for {silence:.0f} s") from None
            except OSError as exc:
                raise Unserved(f"the service dropped the connection ({exc.strerror or exc})") from None
            if not data:
                raise Unserved("the service closed the connection")
            buf += data
            while len(buf) >= 5:
                size = int.from_bytes(buf[1:5], "big")
                if len(buf) < 5 + size:
                    break
                kind, payload = FRAME_KINDS.get(bytes(buf[:1])), bytes(buf[5 : 5 + size])
                del buf[: 5 + size]
                try:
                    text = payload.decode()
                    if kind is None:
                        raise ValueError
                    if kind == "refused":
                        raise Unserved(f"the service refused: {text}")
                    if kind == "rc":
                        return {"rc": int(text)}
                except ValueError:
                    raise Unserved("the service answered something that is not its protocol") from None
                if kind == "status":
                    import json  # codesight service status only

                    on_message({"status": json.loads(text)})
                else:
                    on_message({kind: text})
    finally:
        sock.close()


def _via_service(argv: list[str]) -> int | None:
    """Run a served command through the service: its exit code, or None where it must run here
    (nothing has been printed then). A service that stops mid-answer is one line and exit 1."""
    printed = False

    def show(msg: dict[str, Any]) -> None:
        nonlocal printed
        for key, stream in (("o", sys.stdout), ("e", sys.stderr)):
            text = msg.get(key)
            if text:
                printed = True
                stream.write(text)
                stream.flush()

    message = {
        "v": PROTOCOL,
        "install": install_key(),
        "env": env_digest(),
        "argv": argv,
        "cwd": os.getcwd(),
        "tty": sys.stdout.isatty() and not os.environ.get("NO_COLOR"),
        "ask": sys.stdin.isatty() and sys.stderr.isatty(),
    }  # a question can be asked here
    try:
        end = request(message, show)
    except Unserved as exc:
        if printed:
            sys.stderr.write(f"codesight: the service stopped mid-answer: {exc}; run the command again\n")
            return 1
        if "--verbose" in argv or str(exc).startswith("refused /"):  # a planted socket is said every time
            sys.stderr.write(f"codesight: answering in this process: {exc}\n")
        return None
    show(end)
    return int(end["rc"])


def start_service(wait: float = 0.0) -> int | None:
    """Start this user's service in the background (a new session, stdin from /dev/null, output to
    its log), unless one is running or starting. With ``wait``, wait that long for it to answer.
    Returns its pid where this call started it."""
    import fcntl

    try:
        lock, log = service_file("lock"), service_file("log")
    except OSError:
        return None
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)  # a service holds it: running, or starting
        return None
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    # The current directory (a repository that may hold a json.py) must not shadow the library: -c
    # puts it first on sys.path, and the code takes it off before importing anything. The service
    # takes its lock first (a call meanwhile starts no second one) and, unless told to hurry, then
    # waits a moment before it imports anything: the call that started it is still exiting, and on
    # two cores the service's imports slowed that down by 50 ms.
    code = (
        "import sys, os, fcntl, time\n"
        "del sys.path[0]\n"
        f"fd = os.open({lock!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except OSError:\n    sys.exit(0)\n"
        f"time.sleep({0.0 if wait else 0.5})\n"
        "from codesight_tui.service import main\n"
        "sys.exit(main(lock_fd=fd))\n"
    )
    try:
        pid = os.posix_spawn(
            sys.executable, [sys.executable, "-c", code], dict(os.environ), file_actions=actions, setsid=True
        )
    except (NotImplementedError, OSError):  # no POSIX_SPAWN_SETSID here: the slower, portable way
        import subprocess

        with open(log, "ab") as out:
            pid = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            ).pid
    if wait:
        import time

        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                connect(0.5).close()
                break
            except Unserved:
                time.sleep(0.05)
    return pid


def main(run_here: Callable[[list[str]], int]) -> int:
    """The console script: ``search`` and ``related`` through the service where one answers;
    everything else, and those where none does, by ``run_here`` (the caller's ``cli.main``,
    which this module never imports: a served call stays light)."""
    argv = sys.argv[1:]
    served = bool(argv) and argv[0] in SERVED and "-h" not in argv and "--help" not in argv and enabled()
    if served:
        rc = _via_service(argv)
        if rc is not None:
            return rc
    rc = run_here(argv)
    if served:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        start_service()  # after the answer: this call is no slower for it
    return rc
