"""The warm service and its thin client, as a user runs them: real processes, a real Unix socket
in a runtime directory of the test's own, a real index. Searches are BM25 (the served path is the
same for every mode, and BM25 needs no model)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from codesight_tui import client

FILES = {
    "uploads/retry.py": 'def retry_failed_upload(chunk, attempts=3):\n    """Retry a failed upload with backoff."""\n'
    "    for n in range(attempts):\n        if chunk.send():\n            return True\n"
    "    return False\n",
    "uploads/queue.py": "class UploadQueue:\n    def push(self, item):\n        self.items.append(item)\n",
    "docs/notes.md": "# Notes\n\nUploads are retried three times before they fail.\n",
}


@pytest.fixture()
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A repository indexed for BM25, and a runtime directory of its own (short: a socket path
    has a 108-byte limit) with the service switched on; every service is stopped at the end."""
    run_dir = tempfile.mkdtemp(prefix="csr-", dir="/tmp")
    os.chmod(run_dir, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", run_dir)
    monkeypatch.setenv("CODESIGHT_SERVICE", "auto")
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert cs("index", str(repo), "--no-embed", service="off").returncode == 0
    yield repo
    pid = service_pid()
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(run_dir, ignore_errors=True)


def cs(
    *args: str,
    cwd: Path | None = None,
    service: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **(env or {}))
    if service is not None:
        full["CODESIGHT_SERVICE"] = service
    return subprocess.run(
        [sys.executable, "-m", "codesight_tui", *args],
        capture_output=True,
        text=True,
        cwd=str(cwd) if cwd else None,
        env=full,
        timeout=timeout,
    )


def service_pid() -> int | None:
    try:
        text = Path(client.service_file("lock")).read_text().strip()
    except OSError:
        return None
    return int(text) if text else None


def status() -> dict[str, Any]:
    out = cs("service", "status", "--json")
    assert out.returncode == 0, out.stderr
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def started() -> bool:
    try:
        client.connect(0.5).close()
        return True
    except client.Unserved:
        return False


def test_a_first_search_answers_in_process_and_starts_the_service_for_the_next(served: Path) -> None:
    first = cs("search", "retry", "failed", "upload", "--mode", "bm25", cwd=served)
    assert first.returncode == 0 and "uploads/retry.py" in first.stdout
    assert wait_for(started), "the first search did not start a service"
    second = cs("search", "retry", "failed", "upload", "--mode", "bm25", cwd=served)
    assert (second.returncode, second.stdout) == (0, first.stdout)
    st = status()
    assert st["running"] and st["served"] == 1
    assert [r["root"] for r in st["repositories"]] == [str(served.resolve())]


@pytest.mark.parametrize(
    "args",
    [
        ("search", "retry", "failed", "upload", "--mode", "bm25"),
        ("search", "retry upload", "--mode", "bm25", "--json"),
        ("search", "UploadQueue", "--mode", "bm25", "--vimgrep"),
        ("related", "uploads/retry.py:2", "--mode", "bm25", "--json"),
        ("search", "zzqx_nothing_like_it", "--mode", "bm25"),
        ("search", "retry", "--mode", "bogus"),
        ("search", "retry", "--lang", "klingon", "--mode", "bm25"),
        ("search", "retry", "--path", "no/such/dir", "--mode", "bm25"),
        ("callees", "retry_failed_upload"),
        ("refs", "queue.py:2", "--json"),
        ("def", "UploadQueue", "--vimgrep"),
        ("callers", "no_such_function"),
    ],
)
def test_served_output_is_the_in_process_output(served: Path, args: tuple[str, ...]) -> None:
    """Every format, a miss, usage errors: the same stdout, stderr and exit code either way, from a
    subdirectory (relative paths and vimgrep's paths are the client's, not the service's)."""
    here = served / "uploads"
    alone = cs(*args, cwd=here, service="off")
    client.start_service(wait=30)
    assert started()
    before = status()["served"]
    got = cs(*args, cwd=here)
    assert (got.returncode, got.stdout, got.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert status()["served"] == before + 1
    if "--vimgrep" in args:
        assert got.stdout.startswith("queue.py:1:7:class UploadQueue")
    if args[0] == "callees":
        assert got.returncode == 0 and "range  line 3" in got.stdout and "send  line 4" in got.stdout


def test_the_installed_command_imports_almost_nothing_when_served(served: Path) -> None:
    """The `codesight` command as installed: a served search loads neither `re` (pip's entry-point
    wrapper imported it: 12 ms of a 55 ms call on 2 cores), nor json, argparse, SQLite or numpy."""
    script = Path(sys.executable).parent / "codesight"
    assert script.is_file() and "import re" not in script.read_text()
    client.start_service(wait=30)
    got = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), "search", "retry", "--mode", "bm25"],
        capture_output=True,
        text=True,
        cwd=served,
        timeout=60,
    )
    assert got.returncode == 0 and "uploads/retry.py" in got.stdout, got.stderr[-500:]
    loaded = {line.split("|")[-1].strip() for line in got.stderr.splitlines() if line.startswith("import time:")}
    assert "codesight_tui.client" in loaded
    heavy = {"json", "argparse", "sqlite3", "numpy", "codesight_tui.cli"}
    if not any(m.startswith("__editable__") for m in loaded):  # an editable install's finder loads re itself
        heavy.add("re")
    assert not loaded & heavy, sorted(loaded & heavy)
    assert status()["served"] == 1


def test_the_socket_is_the_owners_alone(served: Path) -> None:
    client.start_service(wait=30)
    sock = Path(client.socket_path())
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(client.service_file("log")).stat().st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_is_refused_even_where_the_modes_let_them_in(served: Path) -> None:
    """Another user cannot reach the socket; and where its directory and socket were opened up by
    mistake, the service still refuses them by their peer credentials."""
    client.start_service(wait=30)
    path = client.socket_path()

    def as_nobody() -> str:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child becomes nobody and tries to search through the service
            os.close(r)
            try:
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(5)
                s.connect(path)
                try:
                    s.sendall(json.dumps({"v": client.PROTOCOL, "cmd": "ping"}).encode() + b"\n")
                except BrokenPipeError:
                    pass  # refused before it asked: the reason is there to read
                said = s.recv(4096).decode()
            except OSError as exc:
                said = f"OSError {exc.errno}"
            os.write(w, said.encode())
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r) as fh:
            return fh.read()

    assert as_nobody().startswith("OSError")  # 0700 directories, 0600 socket
    opened = [os.environ["XDG_RUNTIME_DIR"], os.path.dirname(path)]
    for d in opened:
        os.chmod(d, 0o755)
    os.chmod(path, 0o666)
    said = as_nobody()
    for d in opened:
        os.chmod(d, 0o700)
    assert said == "x\x00\x00\x00\x24this service belongs to another user"  # a refusal frame
    assert status()["refused"] == 1


def test_a_killed_service_leaves_a_stale_socket_that_the_next_call_replaces(served: Path) -> None:
    client.start_service(wait=30)
    old = service_pid()
    assert old is not None
    os.kill(old, signal.SIGKILL)
    assert wait_for(
        lambda: not Path(f"/proc/{old}").exists() or "Z" in Path(f"/proc/{old}/stat").read_text().split()[2]
    )
    assert os.path.exists(client.socket_path())  # stale: nobody listens
    got = cs("search", "UploadQueue", "--mode", "bm25", "--verbose", cwd=served)
    assert got.returncode == 0 and "uploads/queue.py" in got.stdout
    assert "answering in this process: a stale socket" in got.stderr
    assert wait_for(started)
    assert service_pid() != old
    again = cs("search", "UploadQueue", "--mode", "bm25", cwd=served)
    assert (again.returncode, again.stdout) == (0, got.stdout)


def test_a_client_with_other_settings_is_answered_in_its_own_process(served: Path, tmp_path: Path) -> None:
    client.start_service(wait=30)
    other = {"CODESIGHT_DATA_DIR": str(tmp_path / "elsewhere")}
    got = cs("search", "UploadQueue", "--mode", "bm25", "--verbose", cwd=served, env=other)
    assert "started with other CODESIGHT_*/XDG_* settings" in got.stderr
    assert got.returncode == 0 and "uploads/queue.py" in got.stdout  # indexed afresh in its own data dir
    assert status()["served"] == 0
    # Its owner can stop it from there all the same (it said "not running" and went on).
    pid = service_pid()
    stop = cs("service", "stop", env=other)
    assert (stop.returncode, stop.stdout.strip()) == (0, "codesight service: stopped")
    assert wait_for(
        lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )


def test_the_service_keeps_a_served_repository_fresh(served: Path) -> None:
    client.start_service(wait=30)
    assert cs("search", "UploadQueue", "--mode", "bm25", cwd=served).returncode == 0
    assert wait_for(lambda: status()["repositories"][0]["watching"])
    (served / "uploads" / "resume.py").write_text("def resume_interrupted_transfer(token):\n    return token\n")

    def found() -> bool:
        got = cs("search", "resume_interrupted_transfer", "--mode", "bm25", cwd=served)
        return "uploads/resume.py" in got.stdout

    assert wait_for(found, 30)
    assert status()["served"] >= 2


def test_an_idle_service_exits_and_takes_its_socket(served: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client.start_service(wait=30)
    pid = service_pid()
    assert cs("service", "stop").stdout.strip() == "codesight service: stopped"
    assert not os.path.exists(client.socket_path())
    assert wait_for(
        lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )
    monkeypatch.setenv("CODESIGHT_SERVICE_IDLE_MINUTES", "0.02")  # 1.2 s
    client.start_service(wait=30)
    assert started()
    assert wait_for(lambda: not os.path.exists(client.socket_path()), 20)
    assert cs("service", "status").stdout.startswith("codesight service: not running")


def test_switched_off_means_no_service(served: Path) -> None:
    got = cs("search", "UploadQueue", "--mode", "bm25", cwd=served, service="off")
    assert got.returncode == 0
    time.sleep(1.0)
    assert not started() and service_pid() is None
    assert cs("service", "start", env={"CODESIGHT_SERVICE": "off"}).returncode == 2


def test_many_concurrent_calls_are_all_answered(served: Path) -> None:
    """200 clients at once (the torture harness makes 1,000): every answer whole and right."""
    client.start_service(wait=30)
    expected = cs("search", "retry", "upload", "--mode", "bm25", "--json", cwd=served, service="off").stdout
    results: list[tuple[int | None, str]] = []

    def one() -> None:
        out: list[str] = []
        try:
            end = client.request(
                {
                    "v": client.PROTOCOL,
                    "install": client.install_key(),
                    "env": client.env_digest(),
                    "argv": ["search", "retry", "upload", "--mode", "bm25", "--json"],
                    "cwd": str(served),
                    "tty": False,
                },
                lambda m: out.append(m.get("o", "")),
                silence=60,
            )
            results.append((end["rc"], "".join(out)))
        except client.Unserved as exc:
            results.append((None, str(exc)))

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count((0, expected)) == 200, {r for r in results if r != (0, expected)}
    assert status()["served"] == 200


def test_the_service_keeps_numpys_blas_on_one_thread() -> None:
    """A search's matrix products are small: BLAS threads beside SQLite's BM25 on a 2-core machine
    cost more than they save, so the service runs numpy's BLAS on one thread (children unaffected)."""
    code = (
        "import numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from codesight_tui.service import _one_blas_thread\n"
        "_one_blas_thread()\n"
        "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[1]"


def test_tricklers_and_a_client_that_never_reads_do_not_stall_the_service(served: Path) -> None:
    """Issue 48 item 13: eight connections trickling a byte a second held all eight workers (a
    normal search then waited, gave up and ran in its own process); a request must now arrive
    whole within REQUEST_S. -n is bounded."""
    assert cs("search", "retry", "--mode", "bm25", cwd=served).returncode == 0
    assert wait_for(started)
    before = status()["served"]
    stop = threading.Event()

    def trickle() -> None:
        try:
            conn = client.connect(2.0)
        except client.Unserved:
            return
        try:
            while not stop.is_set():
                try:
                    conn.sendall(b"{")
                except OSError:
                    return
                stop.wait(1.0)
        finally:
            conn.close()

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    try:
        out = cs("search", "retry", "failed", "upload", "--mode", "bm25", "--verbose", cwd=served)
    finally:
        stop.set()
    assert out.returncode == 0 and "uploads/retry.py" in out.stdout
    assert "answering in this process" not in out.stderr, out.stderr  # the service answered it
    assert status()["served"] >= before + 1
    big = cs("search", "retry", "--mode", "bm25", "-n", "100000", cwd=served)
    assert big.returncode == 2 and "--limit takes 1 to 1,000" in big.stderr


def test_a_question_is_asked_on_the_clients_terminal_when_served(served: Path, tmp_path: Path) -> None:
    """Issue 48 item 17: through the service, the [y/N] question for the home directory was never
    asked (the service has no terminal, so it said "pass --yes"); it is handed back and asked."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.py").write_text("x = 1\n")
    env = dict(os.environ, HOME=str(home))
    assert cs("search", "retry", "--mode", "bm25", cwd=served, env={"HOME": str(home)}).returncode == 0
    assert wait_for(started)
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codesight_tui", "search", "anything", "--mode", "bm25"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=home,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N]" not in seen and b"--yes" not in seen and time.monotonic() < deadline:
            try:
                seen += os.read(master, 4096)
            except OSError:
                break
        assert b"[y/N]" in seen, seen.decode(errors="replace")
        os.write(master, b"n\n")
        assert proc.wait(timeout=60) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


def _serve_once(path: str, uid: int | None, got: Path) -> int:
    """A process (as ``uid`` where given) that listens at ``path``, writes whatever one client sends
    into ``got``, and answers like a service: "PLANTED ANSWER" on stdout, exit code 0."""
    pid = os.fork()
    if pid == 0:
        try:
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.listen(8)
            s.settimeout(60)
            conn, _ = s.accept()
            conn.settimeout(5)
            data = b""
            with __import__("contextlib").suppress(OSError):
                while not data.endswith(b"\n"):
                    more = conn.recv(65536)
                    if not more:
                        break
                    data += more
            got.write_bytes(data)
            text = b"PLANTED ANSWER\n"
            conn.sendall(b"o" + len(text).to_bytes(4, "big") + text + b"r\x00\x00\x00\x010")
            conn.close()
        finally:
            os._exit(0)
    return pid


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
@pytest.mark.parametrize("planted", ["link", "socket"])
def test_a_socket_of_another_user_is_never_trusted(served: Path, tmp_path: Path, planted: str) -> None:
    """Issue 66 item 2: ``service-TAG.sock`` planted as a link to another user's socket (or as that
    socket itself, owned by us but listened on by uid 12345) got the request, environment and all,
    and its reply was printed as the answer with exit 0. Now the client refuses it, says so, and
    answers in its own process; the other end hears nothing."""
    other = Path(tempfile.mkdtemp(prefix="cso-", dir="/tmp"))  # tmp_path's parents are 0700
    other.chmod(0o777)
    theirs, got = str(other / "s.sock"), other / "got"
    pid = _serve_once(theirs, 12345, got)
    assert wait_for(lambda: os.path.exists(theirs))
    mine = client.socket_path()
    if planted == "link":
        os.symlink(theirs, mine)
    else:
        os.rename(theirs, mine)
        os.chown(mine, os.getuid(), os.getgid())  # the file looks ours; its listener is not
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    out = cs("search", "retry", "failed", "upload", "--mode", "bm25", cwd=served, env={"AWS_SECRET_ACCESS_KEY": secret})
    assert out.returncode == 0 and "uploads/retry.py" in out.stdout, out.stderr
    assert "PLANTED" not in out.stdout
    assert f"refused {mine}" in out.stderr and out.stderr.count("\n") == 1
    assert not got.exists() or got.read_bytes() == b""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    shutil.rmtree(other, ignore_errors=True)


def test_the_request_carries_a_digest_of_the_settings_never_their_values(served: Path, tmp_path: Path) -> None:
    """Issue 66 item 2: the environment (a fleet store's AWS_SECRET_ACCESS_KEY among it) never
    crosses the socket; the service compares a digest."""
    got = tmp_path / "got"
    pid = _serve_once(client.socket_path(), None, got)
    assert wait_for(lambda: os.path.exists(client.socket_path()))
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    out = cs("search", "retry", cwd=served, env={"AWS_SECRET_ACCESS_KEY": secret, "CODESIGHT_SERVICE": "auto"})
    os.waitpid(pid, 0)
    assert out.stdout == "PLANTED ANSWER\n"  # ours, so trusted: this is what it was sent
    sent = json.loads(got.read_bytes())
    assert secret not in got.read_text() and "AWS_SECRET_ACCESS_KEY" not in got.read_text()
    assert len(sent["env"]) == 64 and sent["argv"] == ["search", "retry"]


def _connections(n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(client.socket_path())
        out.append(s)
    return out


def test_bad_requests_are_answered_and_stop_nothing(served: Path) -> None:
    """Issue 66 item 3: ``{"v":2}`` stopped the service (an install it did not know asked it to
    make way). Each bad request now gets a refusal frame, and the service keeps serving."""
    client.start_service(wait=30)
    pid = service_pid()
    for line in (
        b'{"v":2}',
        b'{"v":3}',
        json.dumps({"v": client.PROTOCOL, "install": "x", "cmd": "stop"}).encode(),
        b"[1,2]",
        b"\xff\xfe",
        b"{" * 100,
        b'{"v":3,"install":1e999}',
    ):
        (s,) = _connections(1)
        s.settimeout(10)
        s.sendall(line + b"\n")
        frame = s.recv(4096)
        s.close()
        assert frame[:1] == b"x", (line, frame)
    assert service_pid() == pid and started()
    assert status()["refused"] >= 7


def test_idle_and_trickling_connections_hold_no_worker(served: Path) -> None:
    """Issue 66 item 3: 200 idle connections made the next search wait 6.4 s and then answer in
    its own process; 16 tricklers, 3.5 s. Only whole requests reach a worker now."""
    assert cs("search", "retry", "--mode", "bm25", cwd=served).returncode == 0
    assert wait_for(started)
    idle = _connections(200)
    tricklers = _connections(16)
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            for s in tricklers:
                with __import__("contextlib").suppress(OSError):
                    s.sendall(b" ")
            stop.wait(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    try:
        for _ in range(3):
            out = cs("search", "retry", "failed", "upload", "--mode", "bm25", "--verbose", cwd=served)
            assert out.returncode == 0 and "uploads/retry.py" in out.stdout
            assert "answering in this process" not in out.stderr, out.stderr  # the service answered
    finally:
        stop.set()
        for s in idle + tricklers:
            s.close()


def test_a_second_install_has_a_service_of_its_own_and_never_stops_the_first(served: Path, tmp_path: Path) -> None:
    """Issue 66 item 17: every install of one user shared one socket, and a call from another
    install stopped the running service (ten restarts with two venvs side by side). Each install
    now has its own socket, lock and service."""
    copy = tmp_path / "other-install"
    shutil.copytree(Path(client.__file__).parent, copy / "codesight_tui", ignore=shutil.ignore_patterns("__pycache__"))
    other = {"PYTHONPATH": str(copy)}
    probe = subprocess.run(
        [sys.executable, "-c", "import codesight_tui.client as c; print(c.__file__, c.install_tag())"],
        capture_output=True,
        text=True,
        env=dict(os.environ, **other),
        cwd=str(tmp_path),
    )
    where, tag = probe.stdout.split()
    assert where.startswith(str(copy)) and tag != client.install_tag()
    assert cs("search", "retry", "--mode", "bm25", cwd=served).returncode == 0
    assert wait_for(started)
    first = service_pid()
    for _ in range(3):
        for env in (other, {}):
            out = cs("search", "UploadQueue", "--mode", "bm25", "--verbose", cwd=served, env=env)
            assert out.returncode == 0 and "uploads/queue.py" in out.stdout
    assert service_pid() == first
    theirs = Path(client.runtime_dir()) / f"service-{tag}.lock"
    assert wait_for(lambda: theirs.exists() and theirs.read_text().strip() != "")
    second = int(theirs.read_text())
    assert second != first

    def served_by_its_own() -> bool:
        out = cs("search", "UploadQueue", "--mode", "bm25", "--verbose", cwd=served, env=other)
        return out.returncode == 0 and "answering in this process" not in out.stderr

    assert wait_for(served_by_its_own, 60, 0.5)  # its own service answers it, once it is up
    assert int(theirs.read_text()) == second and service_pid() == first
    os.kill(second, signal.SIGKILL)


def test_a_runtime_directory_that_is_a_link_elsewhere_is_one_line(served: Path, tmp_path: Path) -> None:
    """Issue 66 item 22: ``service start`` printed a PermissionError traceback when
    ``$XDG_RUNTIME_DIR/codesight`` was a link to another user's directory."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    run_dir = Path(os.environ["XDG_RUNTIME_DIR"])
    shutil.rmtree(run_dir / "codesight", ignore_errors=True)
    (run_dir / "codesight").symlink_to(theirs)
    for action in ("start", "status", "stop"):
        out = cs("service", action)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith("codesight: no runtime directory") and out.stderr.count("\n") == 1
    out = cs("search", "UploadQueue", "--mode", "bm25", cwd=served)
    assert out.returncode == 0 and "uploads/queue.py" in out.stdout and "Traceback" not in out.stderr
    assert list(theirs.iterdir()) == []
