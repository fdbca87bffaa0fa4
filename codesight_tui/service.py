"""One warm codesight service per user, on a Unix socket only its owner can use.

The service keeps an engine open for each repository it has served (the index, the static model
and its vectors in memory), watches those repositories so that their indexes stay fresh (BM25 and
the static tier), and answers ``codesight search`` and ``codesight related`` for the thin client
(``codesight_tui.client``) by running the very same CLI code with the client's arguments: the
output is the in-process output, streamed back line for line.

Who may connect: the socket is 0600 in a 0700 directory of the user's own, and each connection's
peer credentials (``SO_PEERCRED``, where the OS has it) must be this user's. One service per user
and runtime directory: it holds ``service.lock`` for its life, so a second one exits at once, and
a socket left by a service that was killed is replaced. kill -9 loses nothing: index writes are
SQLite transactions under the writer lock, as in any other process.

One service per install (``client.install_tag``): two venvs used side by side each have their own
socket, and neither stops the other's service.

Protocol: one JSON line from the client, ``{v, install, env, argv, cwd, tty}`` (``env``: a digest
of the settings, ``client.env_digest``) or ``{..., cmd: "ping"|"stop"}``; then frames back
(``client.request`` reads them): stdout and stderr text as the command writes it, a keep-alive
every second while it runs, and last its exit code (or why the request was refused).

The main thread reads request lines from every connection at once (a selector), and hands a
worker only a whole request: idle or trickling connections hold no worker, and one that has not
sent its line within ``REQUEST_S`` is refused and closed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from codesight_tui import client
from codesight_tui.core.apps.workspace import EngineOptions, Workspace

WORKERS = 8
MAX_REQUEST = 1 << 20
MAX_PENDING = 512  # connections still sending their request; past this the oldest is dropped
HEARTBEAT_S = 1.0
REQUEST_S = 2.0  # a request line must arrive whole within this: a client trickling bytes holds no worker
SEND_S = 5.0  # a client that reads nothing for this long is gone


class _ToClient:
    """A served call's stdout or stderr (``key``: "o" or "e"): what the command writes goes to
    its client, through the connection's ``_Reply``."""

    def __init__(self, reply: _Reply, key: str) -> None:
        self.reply, self.key = reply, key

    def write(self, text: str) -> int:
        self.reply.write(self.key, text)
        return len(text)

    def flush(self) -> None:
        pass


class _Reply:
    """One connection's way back: stdout is gathered and sent with the next stderr line or at the
    end (few messages, order kept), every write under one lock (the heartbeat shares it)."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.out: list[str] = []
        self.size = 0
        self.gone = False

    def send(self, msg: dict[str, Any]) -> None:
        with self.lock:
            self._send(msg)

    def _send(self, msg: dict[str, Any]) -> None:
        if self.gone:
            return
        if self.out and "o" not in msg:
            text, self.out, self.size = "".join(self.out), [], 0
            self._send({"o": text})
        ((key, value),) = msg.items()
        kind = {"o": b"o", "e": b"e", "k": b"k", "rc": b"r", "refused": b"x", "status": b"s"}[key]
        text = json.dumps(value) if key == "status" else "" if key == "k" else str(value)
        payload = text.encode("utf-8", "replace")
        try:
            self.conn.sendall(kind + len(payload).to_bytes(4, "big") + payload)
        except OSError:
            self.gone = True  # the client went away (Ctrl-C): the command finishes unheard

    def write(self, key: str, text: str) -> None:
        with self.lock:
            if key == "o":
                self.out.append(text)
                self.size += len(text)
                if self.size > 1 << 16:
                    text, self.out, self.size = "".join(self.out), [], 0
                    self._send({"o": text})
            else:
                self._send({"e": text})

    def finish(self, rc: int) -> None:
        self.send({"rc": rc})

    def keep_alive(self) -> None:
        if self.lock.acquire(blocking=False):
            try:
                self._send({"k": 1})
            finally:
                self.lock.release()


def peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's user id, where the OS says it (Linux: ``SO_PEERCRED``)."""
    try:
        return client.peer_uid(conn)
    except OSError:
        return None


def refusal(why: str) -> bytes:
    """A refusal frame (``client.request`` raises ``Unserved`` with ``why``)."""
    payload = why.encode()
    return b"x" + len(payload).to_bytes(4, "big") + payload


class _Pending:
    """A connection whose request line has not all arrived."""

    def __init__(self, conn: socket.socket, deadline: float) -> None:
        self.conn, self.deadline, self.data = conn, deadline, b""


def config_stamp() -> tuple[int, int] | None:
    from codesight_tui.core.config import default_config_file

    try:
        st = default_config_file().stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class Service:
    """The engines, watchers and counters of one running service."""

    def __init__(self, idle_s: float, env: dict[str, str], owner: int | None = None) -> None:
        self.idle_s = idle_s
        self.owner = os.getuid() if owner is None else owner
        self.env = client.env_digest(env)
        self.install = client.install_key()
        self.lock = threading.Lock()
        # The warm engines (a changed config file starts them all afresh). The full model (--full)
        # runs in a child process shared by every engine; BM25 answers from memory.
        self.workspace = Workspace(
            EngineOptions(model_process=True, lexical_processes=True, resident_bm25=True), reload_on=config_stamp
        )
        self.unwatchable: set[Path] = set()  # trees a watcher could not start on: not tried again
        self.replies: set[_Reply] = set()
        self.busy = 0
        self.last = time.monotonic()
        self.started = time.time()
        self.served = 0
        self.refused = 0
        self.failed = 0
        self.stopping = threading.Event()

    # --- engines --------------------------------------------------------------------------------
    def engine(self, root: Path) -> Any:
        """The warm engine of ``root``."""
        return self.workspace.engine(Path(root))

    def watch(self, root: Path) -> None:
        """Keep ``root``'s lexical index and static tier fresh while the service lives (the full
        model is left to ``codesight index``: minutes of CPU the user did not ask for)."""
        with self.lock:
            if (
                root in self.unwatchable
                or self.workspace.watcher(root) is not None
                or root not in self.workspace.roots()
                or self.stopping.is_set()
            ):
                return
            try:
                self.workspace.watch(root, lambda cs: cs.watch(embed=False, static=True))
            except Exception as exc:  # an unwatchable tree is still searched, as a fresh process would  # noqa: BLE001
                self.unwatchable.add(root)
                print(f"codesight service: not watching {root}: {exc}", file=sys.__stderr__)

    def _caught_up(self, root: Path) -> bool:
        """Whether ``root``'s watcher has taken in every change it has seen (nothing pending)."""
        watcher = self.workspace.watcher(root)
        return watcher is not None and watcher.running and watcher.idle()

    def status(self) -> dict[str, Any]:
        with self.lock:
            return {
                "pid": os.getpid(),
                "socket": client.socket_path(),
                "started": self.started,
                "uptime_s": round(time.time() - self.started, 1),
                "served": self.served,
                "refused": self.refused,
                "failed": self.failed,
                "idle_exit_s": self.idle_s,
                "repositories": [
                    {"root": str(r), "watching": self.workspace.watching(r), "caught_up": self._caught_up(r)}
                    for r in self.workspace.roots()
                ],
            }

    # --- requests -------------------------------------------------------------------------------
    def handle(self, conn: socket.socket, data: bytes) -> None:
        """Answer one whole request line (read by ``serve``'s selector) on its connection."""
        reply = _Reply(conn)
        with self.lock:
            self.busy += 1
        try:
            conn.setblocking(True)
            self._handle(reply, data)
        except Exception as exc:  # one bad request never takes the service down  # noqa: BLE001
            with self.lock:
                self.failed += 1
            reply.send({"refused": f"the service failed: {type(exc).__name__}: {exc}"})
        finally:
            with self.lock:
                self.busy -= 1
                self.replies.discard(reply)
                self.last = time.monotonic()
            with contextlib.suppress(OSError):
                conn.close()

    def _refuse(self, reply: _Reply, why: str) -> None:
        with self.lock:
            self.refused += 1
        reply.send({"refused": why})

    def refuse_now(self, conn: socket.socket, why: str) -> None:
        """Refuse a connection from the main thread: one frame if the socket takes it at once
        (it always has room for one), then closed. Never blocks."""
        with self.lock:
            self.refused += 1
        with contextlib.suppress(OSError):
            conn.setblocking(False)
            conn.send(refusal(why))
        with contextlib.suppress(OSError):
            conn.close()

    def _handle(self, reply: _Reply, data: bytes) -> None:
        try:
            msg = json.loads(data)
        except ValueError:
            self._refuse(reply, "not a request")
            return
        reply.conn.settimeout(SEND_S)
        if not isinstance(msg, dict) or msg.get("v") != client.PROTOCOL:
            self._refuse(reply, "another protocol version")
            return
        if msg.get("install") != self.install:
            # Each install has a socket of its own (client.install_tag): this is a bad request,
            # never a reason to stop.
            self._refuse(reply, "not a request of this codesight install")
            return
        cmd = msg.get("cmd")
        if cmd == "stop":  # the owner's to stop, whatever settings it was started with
            reply.finish(0)
            self.stopping.set()
            return
        if msg.get("env") != self.env:
            self._refuse(reply, "the service was started with other CODESIGHT_*/XDG_* settings")
            return
        if cmd == "ping":
            reply.send({"status": self.status()})
            reply.finish(0)
            return
        argv = msg.get("argv")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv) and argv[0] in client.SERVED):
            self._refuse(reply, "not a command the service runs")
            return
        cwd = msg.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            self._refuse(reply, "no working directory")
            return
        with self.lock:
            self.replies.add(reply)
        rc = self.run(argv, cwd, bool(msg.get("tty")), reply, can_ask=bool(msg.get("ask")))
        if rc is not None:
            reply.finish(rc)

    def run(self, argv: list[str], cwd: str, tty: bool, reply: _Reply, can_ask: bool = False) -> int | None:
        """Run one command for a client; its exit code, or None where it was handed back (a
        question to ask on the client's terminal: the client then runs it itself)."""
        from codesight_tui import cli

        # The client's streams: its stdout is a terminal where it said so (colours), its stderr
        # never is (no progress bars over the socket).
        context = cli.Context(
            out=_ToClient(reply, "o"),
            err=_ToClient(reply, "e"),
            workspace=self.workspace,
            can_ask=can_ask,
            out_tty=tty,
            err_tty=False,
        )
        try:
            rc = cli.run(argv, cwd=cwd, context=context)
        except cli.AskInClient:
            reply.send({"refused": "a question to ask on the terminal"})
            return None
        except SystemExit as exc:  # argparse: usage errors and --help
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except Exception as exc:  # noqa: BLE001 - one bad request never takes the service down: counted and answered
            with self.lock:
                self.failed += 1
            context.err.write(f"codesight: {type(exc).__name__}: {exc}\n")
            rc = 1
        with self.lock:
            self.served += 1
            roots = [r for r in self.workspace.roots() if self.workspace.watcher(r) is None]
        for root in roots:
            self.watch(root)
        return rc

    def heartbeat(self) -> None:
        """A keep-alive to every running request each second. A reply busy sending (to a client
        that is slow to read) is skipped, never waited for: it is talking already, and waiting on
        it would hold every other client's keep-alive up to SEND_S."""
        while not self.stopping.wait(HEARTBEAT_S):
            with self.lock:
                replies = list(self.replies)
            for r in replies:
                r.keep_alive()

    def idle(self) -> bool:
        with self.lock:
            return self.idle_s > 0 and self.busy == 0 and time.monotonic() - self.last > self.idle_s


def _one_blas_thread() -> None:
    """numpy's BLAS in this process runs on one thread. A search's matrix products are small (the
    static tier's nearest neighbours: one vector against the index), and BLAS threads spinning up
    beside SQLite's BM25 on a 2-core machine cost more than they save (in-process fast search on
    Django, p50 14.9-15.8 against 12.5-13.7 ms). Child processes (the model, distillation) are not
    affected."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # an unusual BLAS build: leave it as it is  # noqa: BLE001
        pass


def serve(idle_s: float | None = None, lock_fd: int | None = None) -> int:
    """Run the service until it is stopped, signalled, or idle for ``idle_s`` seconds (default
    the ``service_idle_minutes`` setting). Exits 0 at once where another service holds the lock
    (``lock_fd``: the lock, taken already by ``client.start_service``'s code)."""
    env = client.env_key()  # as the client that started it sent it (imports below set some variables)
    if lock_fd is None:
        lock_fd = os.open(client.service_file("lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print("codesight service: another one is running", file=sys.stderr)
            return 0
    os.ftruncate(lock_fd, 0)
    os.write(lock_fd, f"{os.getpid()}\n".encode())
    os.chdir("/")
    from codesight_tui import cli  # noqa: F401  (warm: every call runs it)
    from codesight_tui.core.config import load_settings
    from codesight_tui.core.engine import CodeSight  # noqa: F401  (warm: the first answer needs it)

    _one_blas_thread()

    if idle_s is None:
        idle_s = load_settings().service_idle_minutes * 60
    path = client.socket_path()
    try:
        os.unlink(path)  # we hold the lock: a socket there is a dead service's
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    inode = os.stat(path).st_ino
    listener.listen(1024)
    service = Service(idle_s, env)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: service.stopping.set())
    threading.Thread(target=service.heartbeat, name="codesight-heartbeat", daemon=True).start()
    print(f"codesight service {os.getpid()}: listening on {path}", file=sys.__stderr__, flush=True)
    pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="codesight-serve")
    pending: dict[socket.socket, _Pending] = {}
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ)
    try:
        while not service.stopping.is_set() and not service.idle():
            for key, _ in selector.select(0.5):
                if key.fileobj is listener:
                    _accept(listener, service, selector, pending)
                else:
                    _read(pending[key.fileobj], service, selector, pending, pool)  # type: ignore[index]
            now = time.monotonic()
            for p in [p for p in pending.values() if p.deadline <= now]:
                _drop(p, selector, pending)
                service.refuse_now(p.conn, "the request did not arrive in time")
    finally:
        service.stopping.set()
        try:
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass
        for p in list(pending.values()):
            _drop(p, selector, pending)
            with contextlib.suppress(OSError):
                p.conn.close()
        selector.close()
        listener.close()
        pool.shutdown(wait=True, cancel_futures=True)
        with service.lock:
            service.workspace.close()
        os.close(lock_fd)
    return 0


def _accept(
    listener: socket.socket, service: Service, selector: selectors.BaseSelector, pending: dict[socket.socket, _Pending]
) -> None:
    """Take every connection waiting: another user's is refused at once; the rest wait, without a
    worker, for their request line."""
    while True:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # out of descriptors, say: the connections already open are still served
            return
        uid = peer_uid(conn)
        if uid is not None and uid != service.owner:
            service.refuse_now(conn, "this service belongs to another user")
            continue
        conn.setblocking(False)
        if len(pending) >= MAX_PENDING:  # the oldest waiter makes room (dicts keep their order)
            oldest = next(iter(pending.values()))
            _drop(oldest, selector, pending)
            service.refuse_now(oldest.conn, "too many connections waiting")
        pending[conn] = _Pending(conn, time.monotonic() + REQUEST_S)
        selector.register(conn, selectors.EVENT_READ)


def _drop(p: _Pending, selector: selectors.BaseSelector, pending: dict[socket.socket, _Pending]) -> None:
    pending.pop(p.conn, None)
    with contextlib.suppress(KeyError, ValueError, OSError):
        selector.unregister(p.conn)


def _read(
    p: _Pending,
    service: Service,
    selector: selectors.BaseSelector,
    pending: dict[socket.socket, _Pending],
    pool: ThreadPoolExecutor,
) -> None:
    """What a waiting connection has sent: a whole line goes to a worker, an over-long one or a
    closed connection goes away."""
    try:
        more = p.conn.recv(65536)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        more = b""
    if not more:
        _drop(p, selector, pending)
        with contextlib.suppress(OSError):
            p.conn.close()
        return
    p.data += more
    if b"\n" in p.data:
        _drop(p, selector, pending)
        pool.submit(service.handle, p.conn, p.data.split(b"\n", 1)[0])
    elif len(p.data) > MAX_REQUEST:
        _drop(p, selector, pending)
        service.refuse_now(p.conn, "request too large")


def main(lock_fd: int | None = None) -> int:
    try:
        return serve(lock_fd=lock_fd)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
