"""Shared fixtures: an isolated data directory, a fixture repository, and two embedders (a tiny
deterministic one for fast unit tests, the real bundled MiniLM for integration tests)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import pytest
from hypothesis import settings as hypothesis_settings

from codesight_tui.core.config import Settings

if TYPE_CHECKING:
    from codesight_tui.core.index.embedder import SentenceTransformerEmbedder

# A suite started from a script in the background (`nohup ... &`) runs with SIGINT and SIGHUP
# ignored, and every process it starts inherits that (issue 48 item 31: a SIGINT test then saw
# its indexer exit 0, and `codesight watch` children outlived their tests). The suite puts the
# defaults back, so the processes it starts behave as they would for a user.
for _sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig is signal.SIGINT else signal.SIG_DFL)

# Property tests run in full under CI, and a short run of each in the inner loop (tests/properties.py
# says how many); `--hypothesis-profile=ci` runs them in full anywhere.
hypothesis_settings.register_profile("ci", deadline=None, print_blob=True)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Nothing a test does may touch ~/.codesight or read the developer's config."""
    base = tmp_path_factory.mktemp("codesight-home")
    monkeypatch.setenv("CODESIGHT_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("CODESIGHT_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("CODESIGHT_CONFIG", str(base / "no-config.toml"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # The developer's own git configuration (a global ignore file) must not change what a test indexes.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(base / "no-gitconfig"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
    # The static tier distils its model once per cache directory, which every test has its own
    # of: it is off here, and tests/integration/test_static.py turns it on with one real distillation.
    monkeypatch.setenv("CODESIGHT_STATIC_MODEL", "off")
    # Likewise the ONNX export of the full model (the default on a CPU) is made once per cache
    # directory: tests run the model through torch, and tests/integration/test_onnx.py exports it for real.
    monkeypatch.setenv("CODESIGHT_EMBEDDING_BACKEND", "torch")
    # Commands run in their own process: tests/e2e/test_service.py starts services of its own.
    monkeypatch.setenv("CODESIGHT_SERVICE", "off")
    yield base


class UnitTierBreach(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _unit_tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/unit is the inner loop: no process of ours started (no CLI, server, worker or model
    process; the engine's own `git` queries are allowed) and no model loaded, or the test belongs in
    tests/integration. Checked, not trusted: doing either there fails."""
    if "unit" not in request.node.path.relative_to(Path(__file__).parent).parts[:1]:
        return

    def refuse(what: str) -> Callable[..., NoReturn]:
        def refused(*_a: object, **_k: object) -> NoReturn:
            raise UnitTierBreach(f"a unit test {what}: move it to tests/integration")

        return refused

    import multiprocessing.process

    popen = subprocess.Popen.__init__

    def only_git(self: subprocess.Popen[bytes], args: Any, *a: Any, **k: Any) -> None:
        program = args[0] if isinstance(args, (list, tuple)) else str(args).split()[0]
        if os.path.basename(str(program)) != "git":
            refuse(f"started a process ({program})")()
        popen(self, args, *a, **k)

    monkeypatch.setattr(subprocess.Popen, "__init__", only_git)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("started a process"))
    monkeypatch.setattr(os, "fork", refuse("forked"))
    from codesight_tui.core.index import embedder, static

    monkeypatch.setattr(embedder, "in_process", refuse("loaded the full model"))
    monkeypatch.setattr(embedder.ProcessEmbedder, "__init__", refuse("started the full model's process"))
    monkeypatch.setattr(static, "load", refuse("loaded a static model"))
    monkeypatch.setattr(static, "distill", refuse("distilled a static model"))


class NetworkAttempt(OSError):
    pass


@pytest.fixture(autouse=True)
def _no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test may open a network connection: search, index, status and watch never do, and `ask`
    only to its own stub server on 127.0.0.1 (tests marked ``loopback``). An attempt fails as an
    unreachable network would, and fails the test even where the code swallowed the error."""
    loopback = request.node.get_closest_marker("loopback") is not None
    attempts: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def allowed(sock: socket.socket, address: Any) -> bool:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return True  # Unix sockets and pipes: multiprocessing, not the network
        return loopback and address[0] in ("127.0.0.1", "::1", "localhost")

    def connect(sock: socket.socket, address: Any) -> None:
        if not allowed(sock, address):
            attempts.append(address)
            raise NetworkAttempt(f"test blocked a network connection to {address}")
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if not allowed(sock, address):
            attempts.append(address)
            return 111  # ECONNREFUSED
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield
    assert not attempts, f"network connections attempted: {attempts}"


@pytest.fixture
def settings(_isolated_home: Path) -> Settings:
    return Settings(data_dir=_isolated_home / "data", cache_dir=_isolated_home / "cache")


class HashEmbedder:
    """Deterministic bag-of-words vectors: same words, same direction. Counts what it embeds."""

    name = "test/hash-embedder"
    device = "cpu"
    max_seq_length = 256

    def __init__(self, dim: int = 64, name: str | None = None) -> None:
        self.dim = dim
        if name:
            self.name = name
        self.calls: list[str] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"[a-z]+", text.lower()):
            h = int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
            v[h % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v + 1.0 / np.sqrt(self.dim)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vec(t) for t in texts])

    def encode_query(self, text: str) -> np.ndarray:
        return self._vec(text)


@pytest.fixture(scope="session")
def static_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A static model distilled for real from the bundled MiniLM (``core.static.distill``, in its
    child process), once for the whole session."""
    from codesight_tui.core.index.static import distill
    from codesight_tui.core.ingest.tokens import resolve_model

    dest = tmp_path_factory.mktemp("static") / "minilm-static"
    distill(Path(resolve_model("minilm").load_from), dest)
    return dest


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, every: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true (True) or ``timeout`` seconds pass (False)."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(every)
    return False


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> SentenceTransformerEmbedder:
    """The real bundled all-MiniLM-L6-v2 on CPU, loaded once for the whole session."""
    from codesight_tui.core.config import DEFAULT_MODEL
    from codesight_tui.core.index.embedder import SentenceTransformerEmbedder
    from codesight_tui.core.ingest.tokens import resolve_model

    os.environ["HF_HUB_OFFLINE"] = "1"
    return SentenceTransformerEmbedder(resolve_model(DEFAULT_MODEL), device="cpu")


FILES: dict[str, str] = {
    "src/geo.py": '''"""Geography helpers."""
import math


def haversine(lat1, lon1, lat2, lon2):
    r = 6371.0
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi = math.radians(lat2 - lat1)
    dlmb = math.radians(lon2 - lon1)
    a = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlmb / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))
''',
    "src/config_loader.py": '''import json


class ConfigLoader:
    """Reads settings from disk."""

    def __init__(self, root):
        self.root = root

    def parse_config_file(self, name):
        with open(self.root / name) as fh:
            return json.load(fh)

    def reload(self):
        self.cache = {}
''',
    "src/auth.py": """import hashlib
import hmac
import os


def hash_password(password: str, salt: bytes | None = None) -> tuple[bytes, bytes]:
    salt = salt or os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 200_000)
    return salt, digest


def verify_password(password: str, salt: bytes, digest: bytes) -> bool:
    return hmac.compare_digest(hash_password(password, salt)[1], digest)
""",
    "web/client.js": """import { request } from "./http.js";

export class UploadClient {
  constructor(baseUrl) {
    this.baseUrl = baseUrl;
  }

  async retryUpload(file, attempts = 3) {
    for (let i = 0; i < attempts; i++) {
      try {
        return await request(this.baseUrl + "/upload", file);
      } catch (err) {
        await new Promise((r) => setTimeout(r, 2 ** i * 100));
      }
    }
    throw new Error("upload failed");
  }
}

export const parseConfigFile = (text) => JSON.parse(text);
""",
    "server/main.go": """package main

import "fmt"

type Server struct {
	Port int
}

func (s *Server) Start() error {
	fmt.Println("listening on", s.Port)
	return nil
}

func main() {
	s := &Server{Port: 8080}
	s.Start()
}
""",
    "README.md": "# Demo\n\nA tiny repository used by codesight's tests.\n\n## Usage\n\nRun it.\n",
    "notes/crlf.txt": "first line\r\nsecond line\r\nthird line\r\n",
    ".gitignore": "*.log\nbuild/\nsecret.txt\n",
    "src/.gitignore": "generated_*.py\n!generated_keep.py\n",
    "src/generated_skip.py": "SKIPPED_BY_NESTED_GITIGNORE = 1\n",
    "src/generated_keep.py": "KEPT_BY_NEGATION = 1\n",
    "debug.log": "ignored log line\n",
    "build/out.py": "IGNORED_BUILD_OUTPUT = 1\n",
    "secret.txt": "hunter2\n",
}


def build_repo(root: Path) -> Path:
    """A small multi-language repository with every awkward case the walker must survive."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())
    (root / "assets").mkdir(exist_ok=True)
    (root / "assets" / "blob.dat2").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    (root / "big.txt").write_bytes(b"x" * 2_000_000)
    (root / "latin1.py").write_bytes(b"# caf\xe9\nLATIN1_NAME = 'caf\xe9'\n")
    os.symlink("..", root / "src" / "loop")  # a symlink loop back to the root
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_repo(tmp_path / "repo")


def snapshot_tree(root: Path) -> dict[str, bytes]:
    """Every file's bytes plus every symlink's target, for byte-for-byte comparisons."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames + dirnames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = b"->" + os.readlink(p).encode()
            elif p.is_file():
                out[rel] = p.read_bytes() + f"|{p.stat().st_mtime_ns}".encode()
    return out


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = 20) -> tuple[str, str]:
    """End a child a test started: ``sig`` first (the way a user stops it), then SIGKILL if it
    has not gone within ``timeout``, so that no failure leaves it running. Its output."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


# A repository to follow the code in (issue 51): a Python cache and the service that uses it, and a
# TypeScript client. Names also sit in comments and strings, which are never references.
NAV_FILES = {
    "store/cache.py": '''"""A small LRU cache."""
from collections import OrderedDict


class LRUCache:
    def __init__(self, size):
        self.size = size
        self.items = OrderedDict()

    def get(self, key):
        # evict is not called here; "evict" in a string is no call either
        return self.items.get(key)

    def put(self, key, value):
        self.items[key] = value
        self.evict()

    def evict(self):
        while len(self.items) > self.size:
            self.items.popitem(last=False)
''',
    "app/service.py": """from store.cache import LRUCache


def make_cache():
    return LRUCache(10)


def lookup(key):
    cache = make_cache()
    cache.put(key, 1)
    return cache.get(key)
""",
    "web/client.ts": """// request() below is what fetchUser calls
export function fetchUser(id: string): Promise<Response> {
  return request(`/users/${id}`);
}

function request(url: string): Promise<Response> {
  return fetch(url);
}
""",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """``files`` (relative path: text) written under ``root``, folders made as needed."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def build_nav_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    return write_tree(root, NAV_FILES)


@pytest.fixture
def nav_repo(tmp_path: Path) -> Path:
    return build_nav_repo(tmp_path / "navrepo")
