"""The fleet (issue 33): several fixture repositories indexed by real worker processes (and by a
real Ray cluster on 127.0.0.1) into a real LanceDB store on a real S3-compatible server (moto's,
on 127.0.0.1), searched, re-indexed after a commit, and killed mid-job (a worker, and the driver
itself)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import snapshot_tree, wait_for

from codesight_tui.core.config import Settings
from codesight_tui.core.fleet import Fleet

pytestmark = pytest.mark.loopback  # moto's S3 server and the Ray cluster's test listen on 127.0.0.1

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00",
}
STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"

PAYMENTS = {
    "billing/charges.py": '''"""Card charges."""


def retry_failed_charge(charge, attempts=3):
    """Retry a card charge the bank declined, backing off between attempts."""
    for n in range(attempts):
        if charge.submit():
            return True
        charge.wait(2 ** n)
    return False
''',
    "billing/invoices.py": '''def render_invoice_pdf(invoice):
    """Lay out an invoice as a PDF document with its line items and totals."""
    return invoice.layout().to_pdf()
''',
    "billing/legacy.py": '''def compute_vat_for_old_orders(order):
    """Value added tax of orders placed before the 2019 migration."""
    return order.total * 0.2
''',
    "settings.py": f'STRIPE_API_KEY = "{STRIPE_KEY}"\nTIMEOUT_SECONDS = 30\n',
    ".env": "DATABASE_PASSWORD=hunter2hunter2\n",
}
FRONTEND = {
    "src/debounce.js": """// Delay a function until the user stops typing.
export function debounceKeystrokes(fn, wait) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), wait); };
}
""",
    "src/router.js": """export function matchRoute(routes, url) {
  // Find the first route whose pattern matches the URL path.
  return routes.find((r) => r.pattern.test(url));
}
""",
}
INFRA = {
    "config/parse.go": """package config

// ParseClusterConfig reads the cluster's YAML configuration file.
func ParseClusterConfig(path string) (*Cluster, error) {
	return load(path)
}
""",
    "deploy/rollout.go": """package deploy

// RolloutCanary shifts traffic to the new version in steps and rolls back on errors.
func RolloutCanary(steps int) error {
	return nil
}
""",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout.strip()


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A", "-f")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """moto's S3 server on a free loopback port, with a bucket."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    import boto3

    boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    ).create_bucket(Bucket="fleet")
    yield endpoint
    server.stop()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, static_model_dir: Path) -> dict[str, str]:
    """The environment of a `codesight` subprocess: the session's distilled static model, test
    credentials for the S3 server."""
    for k, v in {
        "CODESIGHT_STATIC_MODEL": str(static_model_dir),
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)
    return dict(os.environ)


def codesight(
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codesight_tui", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def rows(store: str, endpoint: str | None = None) -> list[dict[str, Any]]:
    """Every row of the store's chunks table (no vectors)."""
    from codesight_tui.core.fleet import store as fleet_store
    from codesight_tui.core.fleet.store import CHUNKS, FleetStore, StoreSpec

    fleet_store._TABLES.clear()  # another process wrote since: open the newest version
    table = FleetStore(StoreSpec(store, endpoint))._table(CHUNKS)
    cols = ["id", "repo", "commit", "path", "blob", "start_line", "content"]
    found: list[dict[str, Any]] = table.search().select(cols).limit(None).to_arrow().to_pylist()
    return found


def assert_consistent(store: str, repos: dict[str, Path], endpoint: str | None = None) -> dict[str, str]:
    """Each repository's rows are exactly one commit's: ids unique, every row's blob that file's
    blob in that commit, and every indexed file of the commit present. Returns {repo: commit}."""
    found = rows(store, endpoint)
    assert len({r["id"] for r in found}) == len(found), "duplicate rows"
    commits: dict[str, str] = {}
    for name, path in repos.items():
        mine = [r for r in found if r["repo"] == name]
        if not mine:
            continue
        assert len({r["commit"] for r in mine}) <= 2  # rows of unchanged files keep the commit they came in
        head = git(path, "rev-parse", "HEAD")
        tree = dict(line.split("\t")[::-1] for line in git(path, "ls-tree", "-r", head).splitlines())
        blobs = {p: meta.split()[2] for p, meta in tree.items()}
        for r in mine:
            assert blobs.get(r["path"]) == r["blob"], (name, r["path"])
        commits[name] = head
    return commits


def test_index_search_and_reindex_on_s3(tmp_path: Path, env: dict[str, str], s3: str) -> None:
    clones = tmp_path / "clones"
    payments = make_repo(clones / "payments", PAYMENTS)
    frontend = make_repo(clones / "frontend", FRONTEND)
    infra = make_repo(clones / "infra", INFRA)
    repos = {"payments": payments, "frontend": frontend, "infra": infra}
    store = "s3://fleet/team"
    before = {name: snapshot_tree(path) for name, path in repos.items()}

    done = codesight(
        "fleet", "index", str(clones), "--store", store, "--endpoint", s3, "--workers", "2", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(report["indexed"]) == ["frontend", "infra", "payments"] and report["failed"] == []
    assert report["workers"] == 2
    assert {name: snapshot_tree(path) for name, path in repos.items()} == before  # nothing written into them

    status = json.loads(codesight("fleet", "status", "--store", store, "--endpoint", s3, "--json", env=env).stdout)
    assert {r["name"]: r["commit"] for r in status["repos"]} == {
        n: git(p, "rev-parse", "HEAD") for n, p in repos.items()
    }
    assert status["model"]["kind"] == "static"

    # Search from outside any repository: the fleet alone, each hit with its repository and commit.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    found = codesight(
        "search",
        "retry a declined card charge with backoff",
        "--store",
        store,
        "--endpoint",
        s3,
        "--json",
        env=env,
        cwd=outside,
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert (hits[0]["repo"], hits[0]["path"], hits[0]["commit"]) == (
        "payments",
        "billing/charges.py",
        git(payments, "rev-parse", "HEAD"),
    )
    symbol = json.loads(
        codesight(
            "search", "ParseClusterConfig", "--store", store, "--endpoint", s3, "--json", env=env, cwd=outside
        ).stdout
    )
    assert (symbol[0]["repo"], symbol[0]["path"], symbol[0]["line"]) == ("infra", "config/parse.go", 4)
    narrowed = json.loads(
        codesight(
            "search", "function", "--store", store, "--endpoint", s3, "--repo", "front*", "--json", env=env, cwd=outside
        ).stdout
    )
    assert narrowed and {h["repo"] for h in narrowed} == {"frontend"}
    text = codesight("search", "canary rollout", "--store", store, "--endpoint", s3, env=env, cwd=outside).stdout
    assert f"[infra@{git(infra, 'rev-parse', 'HEAD')[:10]}] deploy/rollout.go:" in text

    # Secrets: the .env file is never read, the key in settings.py is masked.
    everything = rows(store, s3)
    assert not any(r["path"] == ".env" for r in everything)
    assert not any(STRIPE_KEY in r["content"] for r in everything)
    assert any(r["path"] == "settings.py" for r in everything)

    # A commit in one repository (a file changed, one removed, one added) and an uncommitted edit
    # in another: only the commit is indexed, only the changed files are read.
    (payments / "billing" / "charges.py").write_text(
        PAYMENTS["billing/charges.py"]
        + '''

def refund_partial_capture(charge, amount):
    """Give back part of a captured charge to the customer's card."""
    return charge.refund(amount)
'''
    )
    (payments / "billing" / "legacy.py").unlink()
    (payments / "billing" / "payouts.py").write_text(
        "def schedule_merchant_payout(merchant):\n    return merchant.next_payout()\n"
    )
    git(payments, "add", "-A")
    git(payments, "commit", "-q", "-m", "refunds")
    (frontend / "src" / "router.js").write_text("export function uncommittedWizardry() { return 42; }\n")
    before = {name: snapshot_tree(path) for name, path in repos.items()}
    again = codesight(
        "fleet", "index", str(clones), "--store", store, "--endpoint", s3, "--workers", "2", "--json", env=env
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["indexed"] == ["payments"] and sorted(report["unchanged"]) == ["frontend", "infra"]
    assert report["changed_files"] == 2 and report["stale_files"] == 2  # charges.py, payouts.py; charges.py, legacy.py
    assert {name: snapshot_tree(path) for name, path in repos.items()} == before
    new_head = git(payments, "rev-parse", "HEAD")
    hits = json.loads(
        codesight(
            "search",
            "refund part of a captured charge",
            "--store",
            store,
            "--endpoint",
            s3,
            "--json",
            env=env,
            cwd=outside,
        ).stdout
    )
    assert (hits[0]["repo"], hits[0]["commit"], hits[0]["path"]) == ("payments", new_head, "billing/charges.py")
    gone = codesight(
        "search",
        "compute_vat_for_old_orders",
        "--store",
        store,
        "--endpoint",
        s3,
        "--mode",
        "bm25",
        "--json",
        env=env,
        cwd=outside,
    )
    assert all(h["path"] != "billing/legacy.py" for h in json.loads(gone.stdout or "[]"))
    assert (
        codesight(
            "search", "uncommittedWizardry", "--store", store, "--endpoint", s3, "--mode", "bm25", env=env, cwd=outside
        ).returncode
        == 1
    )
    commits = assert_consistent(store, repos, s3)
    assert commits == {n: git(p, "rev-parse", "HEAD") for n, p in repos.items()}

    # A third run with nothing new reads nothing.
    third = json.loads(
        codesight(
            "fleet", "index", str(clones), "--store", store, "--endpoint", s3, "--json", "--local", env=env
        ).stdout
    )
    assert third["indexed"] == [] and len(third["unchanged"]) == 3


def test_fleet_is_fused_with_the_local_index(tmp_path: Path, env: dict[str, str]) -> None:
    clones = tmp_path / "clones"
    payments = make_repo(clones / "payments", PAYMENTS)
    make_repo(clones / "frontend", FRONTEND)
    store = str(tmp_path / "store")
    assert codesight("fleet", "index", str(clones), "--store", store, "--local", env=env).returncode == 0
    # Uncommitted work in the local clone shows; the fleet's copy of this repository gives way to it.
    (payments / "billing" / "disputes.py").write_text(
        'def open_chargeback_dispute(charge):\n    """Contest a chargeback the bank opened."""\n    return charge.dispute()\n'
    )
    out = codesight("search", "contest a chargeback", "--store", store, "--json", "-n", "20", env=env, cwd=payments)
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)
    assert hits[0]["path"] == "billing/disputes.py" and hits[0]["commit"] == ""
    assert hits[0]["repo"] == str(payments.resolve())
    assert not [h for h in hits if h["repo"] == "payments"]  # the fleet's payments rows are left to the local index
    both = json.loads(
        codesight("search", "debounce keystrokes", "--store", store, "--json", env=env, cwd=payments).stdout
    )
    assert both[0]["repo"] == "frontend" and both[0]["commit"]


THROTTLE = {
    "src/throttle.js": """// Run a function at most once per interval while the user keeps typing.
export function throttleKeystrokes(fn, wait) {
  let timer;
  return (...args) => { if (!timer) { fn(...args); timer = setTimeout(() => { timer = null; }, wait); } };
}
""",
    "src/format.js": """export function formatCurrency(amount, currency) {
  return new Intl.NumberFormat("en", { style: "currency", currency }).format(amount);
}
""",
}


def test_related_works_over_a_fleet(tmp_path: Path, env: dict[str, str]) -> None:
    """ "More like this" over a fleet store: from a symbol or a path:line the store holds (no local
    repository at all), and from a local chunk into the fleet; the source itself is never a hit."""
    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    make_repo(clones / "widgets", THROTTLE)
    make_repo(clones / "infra", INFRA)
    store = str(tmp_path / "store")
    assert codesight("fleet", "index", str(clones), "--store", store, "--local", env=env).returncode == 0
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for target in ("debounceKeystrokes", "src/debounce.js:3"):
        out = codesight("related", target, "--store", store, "--json", env=env, cwd=outside)
        assert out.returncode == 0, out.stderr
        hits = json.loads(out.stdout)
        assert (hits[0]["repo"], hits[0]["path"]) == ("widgets", "src/throttle.js"), hits
        assert not [h for h in hits if h["repo"] == "frontend" and h["path"] == "src/debounce.js"]
        assert all(h["commit"] for h in hits)
    # A local chunk as the source: the fleet's code like it comes back beside the local hits.
    app = make_repo(
        tmp_path / "app",
        {
            "ui/input.js": FRONTEND["src/debounce.js"].replace("debounceKeystrokes", "debounceInput"),
            "ui/math.js": "export function clamp(x, lo, hi) {\n  return Math.min(hi, Math.max(lo, x));\n}\n",
        },
    )
    out = codesight("related", "ui/input.js:2", "--store", store, "--json", env=env, cwd=app)
    assert out.returncode == 0, out.stderr
    found = [(h["repo"], h["path"]) for h in json.loads(out.stdout)]
    assert found[0] == ("frontend", "src/debounce.js"), found
    assert (str(app.resolve()), "ui/input.js") not in found
    missing = codesight("related", "noSuchFunctionAnywhere", "--store", store, env=env, cwd=outside)
    assert missing.returncode == 2 and "noSuchFunctionAnywhere" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def _workers(state: str = "task") -> list[int]:
    """This user's fleet workers (``core.pool``) that are running a task (or idle), by the name
    they give themselves."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and proc.stat().st_uid == os.getuid()
                and (proc / "comm").read_text().strip() == f"codesight-{state}"
            ):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _big_repos(root: Path, n: int, copies: int = 1) -> dict[str, Path]:
    """``n`` repositories of a few hundred chunks each (codesight's own engine's 12 largest files,
    renamed, ``copies`` times over): each task takes long enough to be caught running."""
    engine = Path(__file__).resolve().parents[2] / "codesight_tui" / "core"
    biggest = sorted(engine.rglob("*.py"), key=lambda p: p.stat().st_size, reverse=True)[:12]
    sources = {f"{p.parent.name}_{p.name}": p.read_text() for p in biggest}
    return {
        f"svc{i}": make_repo(
            root / f"svc{i}",
            {
                f"svc{i}/c{k}_{name}": text.replace("codesight", f"svc{i}c{k}")
                for name, text in sources.items()
                for k in range(copies)
            },
        )
        for i in range(n)
    }


def test_a_worker_killed_mid_job_is_retried_and_the_table_stays_consistent(tmp_path: Path, env: dict[str, str]) -> None:
    repos = _big_repos(tmp_path / "clones", 4, copies=2)
    store = str(tmp_path / "store")
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codesight_tui",
            "fleet",
            "index",
            str(tmp_path / "clones"),
            "--store",
            store,
            "--workers",
            "2",
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    killed: list[int] = []

    def kill_one() -> bool:
        for pid in _workers():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return True
        return job.poll() is not None

    assert wait_for(kill_one, timeout=120, every=0.02)
    out, err = job.communicate(timeout=300)
    assert killed, "no worker was seen running a task"
    assert job.returncode in (0, 1), err
    report = json.loads(out)
    # The killed task ran again (MAX_RETRIES): every repository is in, nothing twice.
    assert sorted(report["indexed"]) == sorted(repos) and report["failed"] == [], err
    assert set(assert_consistent(store, repos)) == set(repos)
    again = json.loads(
        codesight("fleet", "index", str(tmp_path / "clones"), "--store", store, "--local", "--json", env=env).stdout
    )
    assert again["indexed"] == [] and sorted(again["unchanged"]) == sorted(repos)


def test_the_job_killed_outright_leaves_whole_repositories_and_the_next_run_completes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # Tasks of about a second each (48 files), eight of them: the kill lands mid-job, with a worker
    # alive, even on a loaded machine where the driver's first write lags the worker by seconds
    # (with four, the worker had finished them all by the first "files changed" line in 2 runs of
    # 4 beside another test run). The workers are found by name among all of this user's
    # processes: a second test suite running fleet tests at the same time shows its workers too.
    repos = _big_repos(tmp_path / "clones", 8, copies=4)
    store = str(tmp_path / "store")
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codesight_tui",
            "fleet",
            "index",
            str(tmp_path / "clones"),
            "--store",
            store,
            "--workers",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert job.stderr is not None
    seen: list[str] = []
    stderr = job.stderr
    reader = threading.Thread(target=lambda: seen.extend(stderr), daemon=True)  # one line per repository written
    reader.start()
    ran, alive = False, []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any("files changed" in line for line in seen):
        ran = ran or bool(_workers())  # a worker was seen running a task
        time.sleep(0.02)
    alive = _workers() + _workers("idle")
    job.kill()
    job.wait(timeout=30)
    assert ran or alive, "no worker was seen"
    if alive:  # killed mid-job with a worker alive: it dies with the driver, nothing orphaned
        assert wait_for(lambda: not _workers() and not _workers("idle"), timeout=10)
    # (In CI the driver's first write has come after the worker's last task: then only the
    # whole-repository and resume checks below apply.)
    assert any("files changed" in line for line in seen), seen
    partial = assert_consistent(store, repos)
    assert 1 <= len(partial) < len(repos)
    from codesight_tui import Fleet

    recorded = {r.name for r in Fleet(store).repos() if r.commit}
    assert recorded <= set(partial)
    resumed = codesight(
        "fleet", "index", str(tmp_path / "clones"), "--store", store, "--workers", "1", "--json", env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert set(report["unchanged"]) == recorded and set(report["indexed"]) == set(repos) - recorded
    assert set(assert_consistent(store, repos)) == set(repos)


def test_a_failing_repository_is_reported_and_skipped(tmp_path: Path, env: dict[str, str]) -> None:
    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    (clones / "empty").mkdir()
    git(clones / "empty", "init", "-q")  # a clone with no commit
    bare = tmp_path / "infra.git"
    make_repo(tmp_path / "infra-src", INFRA)
    git(tmp_path, "clone", "-q", "--bare", str(tmp_path / "infra-src"), str(bare))
    store = str(tmp_path / "store")
    done = codesight(
        "fleet",
        "index",
        str(clones),
        f"file://{bare}",
        f"file://{tmp_path}/missing.git",
        str(tmp_path / "no-such-dir"),
        "--store",
        store,
        "--workers",
        "2",
        "--json",
        env=env,
    )
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert sorted(report["indexed"]) == ["frontend", "infra"]  # a git URL (file://) is cloned, read, dropped
    assert sorted(r["repo"] for r in report["failed"]) == sorted(["empty", "missing", str(tmp_path / "no-such-dir")])
    assert all("Traceback" not in r["error"] for r in report["failed"])
    hits = json.loads(codesight("search", "RolloutCanary", "--store", store, "--json", env=env, cwd=tmp_path).stdout)
    assert hits[0]["repo"] == "infra"
    status = codesight("fleet", "status", "--store", store, env=env)
    assert "empty" in status.stdout and "failed:" in status.stdout


def test_a_namesake_from_another_place_never_replaces_a_stored_repository(tmp_path: Path, env: dict[str, str]) -> None:
    """Issue 66, 1: ``a/pay`` then ``b/pay`` (and a URL ending in ``pay.git``) into one store: the
    second is refused in one line that says why and how, and the first keeps every row."""
    first = make_repo(tmp_path / "a" / "pay", FRONTEND)
    second = make_repo(tmp_path / "b" / "pay", INFRA)
    make_repo(tmp_path / "src-pay", INFRA)
    bare = tmp_path / "org" / "pay.git"
    git(tmp_path, "clone", "-q", "--bare", str(tmp_path / "src-pay"), str(bare))
    store = str(tmp_path / "store")
    assert codesight("fleet", "index", str(first), "--store", store, env=env).returncode == 0
    before = sorted((r["path"], r["id"]) for r in rows(store) if r["repo"] == "pay")
    assert before
    for other in (str(second), f"file://{bare}"):
        out = codesight("fleet", "index", other, "--store", store, env=env)
        assert out.returncode == 1, out.stderr
        assert "already holds another repository named 'pay'" in out.stderr and "Traceback" not in out.stderr
        assert "0 stale files replaced" in out.stdout
        assert sorted((r["path"], r["id"]) for r in rows(store) if r["repo"] == "pay") == before
    assert_consistent(store, {"pay": first})
    status = json.loads(codesight("fleet", "status", "--store", store, "--json", env=env).stdout)
    assert [(r["name"], r["source"], r["error"]) for r in status["repos"]] == [("pay", str(first), "")]
    # the same repository again is no clash, and a name of its own lets the namesake in beside it
    assert codesight("fleet", "index", str(first), "--store", store, env=env).returncode == 0
    out = codesight("fleet", "index", f"pay-b={second}", "--store", store, "--json", env=env)
    assert out.returncode == 0 and json.loads(out.stdout)["indexed"] == ["pay-b"]
    assert sorted((r["path"], r["id"]) for r in rows(store) if r["repo"] == "pay") == before
    assert_consistent(store, {"pay": first, "pay-b": second})


def test_bad_stores_are_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    empty = tmp_path / "not-a-store"
    empty.mkdir()
    out = codesight("search", "anything", "--store", str(empty), env=env, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "is not a fleet store" in out.stderr
    out = codesight(
        "search", "anything", "--store", "s3://fleet/x", "--endpoint", "http://127.0.0.1:9", env=env, cwd=tmp_path
    )
    assert (
        out.returncode == 1
        and "cannot reach the fleet store s3://fleet/x at http://127.0.0.1:9: Connection refused" in out.stderr
        and out.stderr.count("\n") == 1
        and "Traceback" not in out.stderr
    )
    # issue 66 item 23: with no credentials in the environment, it said "access denied"
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    out = codesight(
        "search", "anything", "--store", "s3://fleet/x", "--endpoint", "http://127.0.0.1:9", env=bare, cwd=tmp_path
    )
    assert out.returncode == 1 and "Connection refused" in out.stderr and "access denied" not in out.stderr
    out = codesight("search", "anything", "--repo", "svc*", env=env, cwd=tmp_path)
    assert out.returncode == 2 and "--store" in out.stderr
    out = codesight("fleet", "index", str(tmp_path / "nothing"), "--store", str(tmp_path / "s"), env=env)
    assert out.returncode == 2 and "no repository to index" in out.stderr


def _local_fleet(tmp_path: Path, static_model_dir: Path) -> Fleet:
    """A fleet store of two repositories, built in this process without Ray (``--local``)."""
    from codesight_tui import Fleet
    from codesight_tui.core.config import Settings

    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    make_repo(clones / "infra", INFRA)
    fleet = Fleet(str(tmp_path / "store"), settings=Settings(static_model=str(static_model_dir)))
    report = fleet.index([str(clones)], local=True)
    assert sorted(report.indexed) == ["frontend", "infra"]
    return fleet


async def test_the_tui_searches_the_fleet_beside_the_repository(
    repo: Path, settings: Settings, tmp_path: Path, static_model_dir: Path
) -> None:
    from conftest import HashEmbedder
    from surfaces import search, settle

    from codesight_tui import CodeSight
    from codesight_tui.tui.app import CodeSightApp
    from codesight_tui.tui.widgets.preview import Preview
    from codesight_tui.tui.widgets.results import ResultsList

    fleet = _local_fleet(tmp_path, static_model_dir)
    engine = CodeSight(repo, settings=settings, embedder=HashEmbedder())
    app = CodeSightApp(repo, engine=engine, watch=False, fleet=fleet)
    notes: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        await settle(app, pilot)
        await search(app, pilot, "debounce keystrokes")
        fleet_hits = [h for h in app.hits if h.commit]
        assert fleet_hits and fleet_hits[0].repo == "frontend" and fleet_hits[0].path == "src/debounce.js"
        row = app.query_one(ResultsList).get_option_at_index(app.hits.index(fleet_hits[0])).prompt
        assert f"frontend@{fleet_hits[0].commit[:7]}:" in str(row)
        app.query_one(ResultsList).highlighted = app.hits.index(fleet_hits[0])
        await settle(app, pilot)
        preview = app.query_one(Preview)
        assert preview.current is fleet_hits[0]
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert any("is in the fleet store, not on this machine" in n for n in notes)
        await search(app, pilot, "haversine")  # the repository's own hits still come first for its code
        assert app.hits[0].path == "src/geo.py" and not app.hits[0].commit


async def test_mcp_search_takes_the_fleet_too(
    repo: Path, tmp_path: Path, static_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from surfaces import server, text_of

    fleet = _local_fleet(tmp_path, static_model_dir)
    monkeypatch.setenv("CODESIGHT_STATIC_MODEL", str(static_model_dir))
    async with server(repo, extra=("--store", fleet.spec.uri)) as client:
        r = await client.call_tool("search", {"query": "ParseClusterConfig", "mode": "bm25", "top_k": 5})
        assert not r.is_error, r.content
        hits = r.structured_content["results"]
        assert (hits[0]["repo"], hits[0]["path"]) == ("infra", "config/parse.go") and hits[0]["commit"]
        r = await client.call_tool("search", {"query": "function", "mode": "bm25", "fleet_repo": "front*"})
        assert {h["repo"] for h in r.structured_content["results"] if h["commit"]} == {"frontend"}
        r = await client.call_tool("search", {"query": "haversine", "mode": "bm25"})
        assert r.structured_content["results"][0]["path"] == "src/geo.py"
        assert r.structured_content["results"][0]["commit"] is None
        # related over the fleet: a symbol only the fleet has is its source, and is no hit itself
        r = await client.call_tool("find_related", {"location": "RolloutCanary", "mode": "bm25"})
        assert not r.is_error, r.content
        found = [(h["repo"], h["path"]) for h in r.structured_content["results"]]
        assert found and ("infra", "deploy/rollout.go") not in found
        # grep too: the store's lines beside the repository's, each with its commit
        r = await client.call_tool("grep", {"pattern": "Canary", "fleet_repo": "infra"})
        assert not r.is_error, r.content
        lines = [(m["repo"], m["path"], m["line"], bool(m["commit"])) for m in r.structured_content["matches"]]
        assert lines == [("infra", "deploy/rollout.go", 3, True), ("infra", "deploy/rollout.go", 4, True)]
    async with server(repo) as client:
        r = await client.call_tool("search", {"query": "x", "fleet_repo": "a*"})
        assert r.is_error and "no" in text_of(r) and "fleet" in text_of(r)


# --- issue 48: the fleet's security items ---------------------------------------------------------


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit():
                ppid = int((proc / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _sockets(pids: set[int]) -> dict[str, list[str]]:
    """What the processes listen on: TCP and UDP sockets bound to an address (``ip:port``), and
    Unix sockets bound to a path."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
        except OSError:
            continue
    found: dict[str, list[str]] = {"inet": [], "unix": []}
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                f = line.split()
                listening = f[3] == "0A" if table.startswith("tcp") else f[3] == "07"
                if f[9] in inodes and listening:
                    found["inet"].append(f"{table} {f[1]}")
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[6] in inodes and f[7].startswith("/"):
            with contextlib.suppress(OSError):  # the path, and its folder's mode while it is there
                found["unix"].append(f"{f[7]} {_mode(Path(f[7]).parent):o}")
    return found


def test_a_run_here_listens_on_no_port_and_leaves_nothing_behind(tmp_path: Path, env: dict[str, str]) -> None:
    """Item 2: a local Ray listened on every interface (GCS, raylet: 7 ports beyond loopback),
    made its directories 0777 and wrote ~/.ray/auth_token 0644. The workers here listen on no
    port; the fork server's socket is in a 0700 directory of ours; nothing is left in TMPDIR or
    HOME after the run."""
    repos = _big_repos(tmp_path / "clones", 3, copies=2)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codesight_tui",
            "fleet",
            "index",
            str(tmp_path / "clones"),
            "--store",
            str(tmp_path / "store"),
            "--workers",
            "2",
            "--json",
        ],
        env=env | {"HOME": str(home), "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seen: dict[str, list[str]] = {"inet": [], "unix": []}
    workers_seen = set()

    def look() -> bool:
        tree = _descendants(job.pid) | {job.pid}
        workers_seen.update(tree & set(_workers()))
        for kind, where in _sockets(tree).items():
            seen[kind] += where
        return job.poll() is not None

    wait_for(look, timeout=240, every=0.05)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 0, err
    assert sorted(json.loads(out)["indexed"]) == sorted(repos)
    assert workers_seen, "no worker was seen running a task"
    assert seen["inet"] == [], seen
    assert seen["unix"], "the fork server's socket was not seen"
    for where in set(seen["unix"]):
        path, mode = where.split()
        assert Path(path).parent.parent == tmp and mode == "700", where
    assert list(tmp.iterdir()) == [] and list(home.iterdir()) == []


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A real Ray cluster's head on 127.0.0.1 (``ray start``), with a token of its own, for
    ``--ray-address``."""
    pytest.importorskip("ray")
    import secrets

    tmp = Path(tempfile.mkdtemp(prefix="cs-ray-", dir="/tmp"))  # short: Ray's socket paths
    token = secrets.token_hex(32)
    env = os.environ | {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_USAGE_STATS_ENABLED": "0",
        "HOME": str(tmp_path_factory.mktemp("ray-home")),
    }
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    started = subprocess.run(
        [
            *ray,
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            "--port=0",
            "--num-cpus=2",
            "--include-dashboard=false",
            f"--temp-dir={tmp}",
            "--disable-usage-stats",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    address = next(line.split("'")[1] for line in started.stdout.splitlines() if "ray start --address=" in line)
    yield address, env
    subprocess.run([*ray, "stop", "--force"], env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    shutil.rmtree(tmp, ignore_errors=True)


def test_a_ray_cluster_runs_the_tasks_when_asked(
    tmp_path: Path, env: dict[str, str], ray_cluster: tuple[str, dict[str, str]]
) -> None:
    """``--ray-address`` hands the tasks to a Ray cluster (here one on 127.0.0.1); the store
    gets the same rows as from the workers here."""
    address, ray_env = ray_cluster
    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    make_repo(clones / "infra", INFRA)
    store = str(tmp_path / "store")
    out = codesight(
        "fleet",
        "index",
        str(clones),
        "--store",
        store,
        "--ray-address",
        address,
        "--json",
        env=env | {k: ray_env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "HOME")},
    )
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)["indexed"]) == ["frontend", "infra"]
    hits = json.loads(codesight("search", "RolloutCanary", "--store", store, "--json", env=env, cwd=tmp_path).stdout)
    assert (hits[0]["repo"], hits[0]["path"]) == ("infra", "deploy/rollout.go")
    out = codesight("fleet", "index", str(clones), "--store", store, "--gpus", "1", env=env)
    assert out.returncode == 2 and "--ray-address" in out.stderr and "Traceback" not in out.stderr


def test_a_store_path_is_created_only_by_a_writer_and_only_where_it_is_a_store(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Item 3: a search creates nothing; an index run refuses a directory that holds other files
    (a repository) and leaves the mode of a directory it was given as it was."""
    env = env | {"CODESIGHT_SERVICE": "off"}
    out = codesight("search", "foo", "--store", str(tmp_path / "x" / "a" / "b"), env=env, cwd=tmp_path)
    assert out.returncode == 2 and "no fleet store at" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "x").exists()

    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    other = make_repo(tmp_path / "other-repo", {"README": "hello\n", "docs/guide.md": "# Guide\n"})
    (other / "README").chmod(0o644)
    (other / "docs").chmod(0o755)
    before = snapshot_tree(other)
    out = codesight("fleet", "index", str(clones), "--store", str(other), "--local", env=env)
    assert out.returncode == 2 and "is not a fleet store and not empty" in out.stderr, out.stderr
    assert snapshot_tree(other) == before and not list(other.glob("*.lance"))
    assert _mode(other / "README") == 0o644 and _mode(other / "docs") == 0o755

    given = tmp_path / "shared-store"
    given.mkdir()
    given.chmod(0o755)
    assert codesight("fleet", "index", str(clones), "--store", str(given), "--local", env=env).returncode == 0
    assert _mode(given) == 0o755  # the directory was the user's: its mode is theirs
    assert {p.name for p in given.iterdir()} == {"chunks.lance", "repos.lance", "meta.lance"}
    assert all(_mode(p) == 0o700 for p in given.iterdir())  # what the store wrote is private
    made = tmp_path / "new" / "store"
    assert codesight("fleet", "index", str(clones), "--store", str(made), "--local", env=env).returncode == 0
    assert _mode(tmp_path / "new") == 0o700 and _mode(made) == 0o700


def test_credentials_in_a_source_url_are_never_stored_or_printed(tmp_path: Path, env: dict[str, str]) -> None:
    """Item 4: a token in a git URL stays out of the store (readable by whoever reads the bucket),
    the report, the status and the error."""
    store = tmp_path / "store"
    url = "https://deploy:SECRET-TOKEN-42@127.0.0.1:9/org/pay.git?access_token=SECRET-TOKEN-43"
    out = codesight("fleet", "index", url, "--store", str(store), "--local", "--json", env=env)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["failed"] and report["failed"][0]["repo"] == "pay"
    status = codesight("fleet", "status", "--store", str(store), "--json", env=env)
    assert status.returncode in (0, 1) and "127.0.0.1:9/org/pay.git" in status.stdout
    for text in (out.stdout, out.stderr, status.stdout, status.stderr):
        assert "SECRET-TOKEN" not in text
    for f in store.rglob("*"):
        if f.is_file():
            assert b"SECRET-TOKEN" not in f.read_bytes(), f


def test_an_unreachable_or_broken_store_costs_only_its_own_hits(tmp_path: Path, env: dict[str, str]) -> None:
    """Item 9: a fleet store that cannot be reached, or is no store, is one line on stderr; the
    local hits still come, exit 0."""
    payments = make_repo(tmp_path / "payments", PAYMENTS)
    assert codesight("index", str(payments), "--no-embed", env=env).returncode == 0
    not_a_store = tmp_path / "not-a-store"
    not_a_store.mkdir()
    (not_a_store / "notes.txt").write_text("x\n")
    for extra in (
        {"CODESIGHT_FLEET_STORE": "s3://fleet/x", "CODESIGHT_FLEET_ENDPOINT": "http://127.0.0.1:9"},
        {"CODESIGHT_FLEET_STORE": str(not_a_store)},
    ):
        out = codesight("search", "retry failed charge", "--mode", "bm25", "--json", env=env | extra, cwd=payments)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)[0]["path"] == "billing/charges.py"
        assert "local hits only" in out.stderr and "Traceback" not in out.stderr


def test_a_store_from_a_newer_codesight_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    """Item 11: a store whose format is newer than this codesight's is neither searched nor
    written to, in one line."""
    import lancedb

    clones = tmp_path / "clones"
    make_repo(clones / "frontend", FRONTEND)
    store = tmp_path / "store"
    assert codesight("fleet", "index", str(clones), "--store", str(store), "--local", env=env).returncode == 0
    lancedb.connect(str(store)).open_table("meta").update(where="key = 'schema'", values={"value": "9"})
    before = snapshot_tree(store)
    out = codesight("fleet", "index", str(clones), "--store", str(store), "--local", env=env)
    assert out.returncode == 2 and "newer codesight" in out.stderr and "Traceback" not in out.stderr
    out = codesight("search", "debounce", "--store", str(store), env=env, cwd=tmp_path)
    assert out.returncode == 2 and "newer codesight" in out.stderr
    assert snapshot_tree(store) == before


def test_a_large_blob_is_never_unpacked(tmp_path: Path) -> None:
    """Item 10: the checkout skips files over max_file_size before writing them (a 3 MB blob in a
    small repository costs no temporary space)."""
    from codesight_tui.core.fleet.job import RepoTask, Source, _checkout

    repo = make_repo(tmp_path / "big", {"src/app.py": "def main():\n    return 1\n", "data/blob.bin": "x" * 3_000_000})
    commit = git(repo, "rev-parse", "HEAD").strip()
    work = tmp_path / "work"
    work.mkdir()
    task = RepoTask(Source("big", str(repo)), commit, {}, "static", {}, None)
    tree = _checkout(task, work, 1_000_000)
    assert (tree / "src" / "app.py").is_file() and not (tree / "data" / "blob.bin").exists()
    assert sum(f.stat().st_size for f in tree.rglob("*") if f.is_file()) < 10_000


def test_fleet_hits_carry_the_repositorys_current_commit(tmp_path: Path, env: dict[str, str]) -> None:
    """Item 18: a file unchanged by the last commit is labelled with that commit, as `fleet
    status` says, not with the commit its rows were first written at."""
    clones = tmp_path / "clones"
    frontend = make_repo(clones / "frontend", FRONTEND)
    store = str(tmp_path / "store")
    assert codesight("fleet", "index", str(clones), "--store", store, "--local", env=env).returncode == 0
    (frontend / "src" / "router.js").write_text("export function matchRoute(routes, url) {\n  return null;\n}\n")
    git(frontend, "commit", "-qam", "router")
    head = git(frontend, "rev-parse", "HEAD").strip()
    assert codesight("fleet", "index", str(clones), "--store", store, "--local", env=env).returncode == 0
    hits = json.loads(
        codesight("search", "debounce keystrokes", "--store", store, "--json", env=env, cwd=tmp_path).stdout
    )
    assert hits[0]["path"] == "src/debounce.js" and hits[0]["commit"] == head


def test_grep_reads_a_fleet_store_by_pattern(tmp_path: Path, static_model_dir: Path, env: dict[str, str]) -> None:
    """Issue 68 item 7: exact and regex search over a fleet store's chunks, narrowed by the
    store's FM-index where the pattern's literals are in the case given, beside local lines."""
    from codesight_tui.core.search.contract import Filters, GrepOptions, SearchRequest

    fleet = _local_fleet(tmp_path, static_model_dir)
    indices = {tuple(i.columns) for i in fleet.store._table("chunks").list_indices()}
    assert ("content",) in indices  # the FM-index, made when the store was finished

    def lines(pattern: str, **options: object) -> set[tuple[str, str, int]]:
        answer = fleet.grep(SearchRequest(pattern, limit=1000, grep=GrepOptions(**options)))  # type: ignore[arg-type]
        assert all(h.commit and h.spans for h in answer)
        return {(h.repo, h.path, h.line) for h in answer}

    assert lines("setTimeout(", fixed=True) == {("frontend", "src/debounce.js", 4)}
    assert lines(r"func \w+\(") == {("infra", "config/parse.go", 4), ("infra", "deploy/rollout.go", 4)}
    assert lines("ROLLOUTCANARY", case="insensitive") == {
        ("infra", "deploy/rollout.go", 3),
        ("infra", "deploy/rollout.go", 4),
    }
    assert lines("rolloutcanary") == set()  # case-sensitive by default, as rg
    assert lines("(matchRoute|ParseClusterConfig)") == {
        ("frontend", "src/router.js", 1),
        ("infra", "config/parse.go", 3),
        ("infra", "config/parse.go", 4),
    }
    (hit,) = fleet.grep(SearchRequest("clearTimeout", grep=GrepOptions()))
    assert hit.match_text.strip().startswith("return (...args)") and hit.spans == ((24, 36),) and hit.column == 25
    only = fleet.grep(SearchRequest("return", filters=Filters(repo="infra", glob="deploy/"), grep=GrepOptions()))
    assert [(h.repo, h.path, h.line) for h in only] == [("infra", "deploy/rollout.go", 5)]
    out = codesight("grep", "Canary", "--store", str(tmp_path / "store"), env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    shown = out.stdout.splitlines()
    assert len(shown) == 2 and all(ln.startswith("infra@") for ln in shown)  # the repository and its commit
    assert "/deploy/rollout.go:3:" in shown[0] and "/deploy/rollout.go:4:" in shown[1]
    assert (
        codesight("grep", "nothing_like_this", "--store", str(tmp_path / "store"), env=env, cwd=tmp_path).returncode
        == 1
    )
    # Inside a clone the working tree answers for its repository, the store for the others.
    frontend = tmp_path / "clones" / "frontend"
    (frontend / "src" / "router.js").write_text("export function matchRoute(routes, url) { return null; } // Canary\n")
    out = codesight("grep", "Canary", "--store", str(tmp_path / "store"), "-y", env=env, cwd=frontend)
    assert out.returncode == 0, out.stderr
    shown = out.stdout.splitlines()
    assert any("src/router.js:1:" in ln and not ln.startswith("frontend@") for ln in shown)  # the local line
    assert sum(ln.startswith("infra@") for ln in shown) == 2 and not any(ln.startswith("frontend@") for ln in shown)
