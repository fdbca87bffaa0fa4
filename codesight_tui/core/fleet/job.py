"""``codesight fleet index``: many repositories into one fleet store (``core.fleet.store``).

The driver (this process) resolves the sources (git URLs, local clones, directories of clones)
to a commit each, asks the store which repositories are already at that commit, and hands each of
the others to a task: on worker processes of this machine (``core.store.pool``, no network listener),
on a Ray cluster (``--ray-address``), or in this process (``--local``). A task reads the commit
(``git archive``, so nothing is written into the repository, and a clone's uncommitted edits are
not indexed), walks it with the same walker (.gitignore, secret files, size caps), chunks only the
files whose git blob differs from the store's, masks secrets, and embeds with the same models
through the same content-addressed cache; it returns rows, and writes nothing. The driver is the
one writer: it applies each repository's rows as its task ends (``FleetStore.apply``), so a
worker killed mid-task leaves the store as it was (the task runs again), a repository that fails
is reported and skipped, and a driver killed mid-job leaves whole repositories done and the rest
at their old commit, for the next run.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.fleet.store import KINDS, FleetStore, RepoRecord, StoreSpec, chunk_id, chunks_schema
from codesight_tui.core.process.models import model_info, static_model_path
from codesight_tui.core.redact import scrub_credentials

if TYPE_CHECKING:
    import numpy as np

    from codesight_tui.core.config import Settings
    from codesight_tui.core.index.cache import EmbeddingCache
    from codesight_tui.core.ingest.chunker import Chunker
    from codesight_tui.core.ingest.walker import FileEntry

GIT_TIMEOUT = 600  # seconds for one clone or archive
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
EMBED_BATCH = 256
# LanceDB warns at every fork once it is loaded; git is run by fork and exec, which is safe.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental")


@dataclass(frozen=True)
class Source:
    """A repository to index: its name in the store, and a local clone or a git URL."""

    name: str
    location: str
    url: bool = False


def _is_url(text: str) -> bool:
    return "://" in text or (":" in text and "@" in text.split(":", 1)[0] and not Path(text).exists())


def _git(
    args: list[str],
    cwd: str | None = None,
    *,
    timeout: float = 60,
    stdout: Any = subprocess.PIPE,
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **_GIT_ENV}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            stdout=stdout,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError("git is not installed: the fleet reads repositories through git") from None
    except subprocess.TimeoutExpired:
        raise CodeSightError(f"git {args[0]} took more than {timeout:.0f} s") from None
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        said = scrub_credentials(err[-1] if err else f"exit {done.returncode}")
        raise CodeSightError(f"git {args[0]} failed: {said[:200]}")
    return done


def _is_clone(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,99})=(.+)", re.DOTALL)


def _named(item: str) -> tuple[str | None, str]:
    """``NAME=SOURCE`` gives a source its name in the store; anything else keeps the name its
    location ends in. An existing path with a ``=`` in it is a path."""
    match = _NAMED.fullmatch(item)
    if match is None or Path(item).expanduser().exists():
        return None, item
    return match.group(1), match.group(2)


def same_source(a: str, b: str) -> bool:
    """Whether two locations name one repository: credentials, a trailing ``/`` and ``.git`` aside."""

    def key(text: str) -> str:
        return scrub_credentials(text).rstrip("/").removesuffix(".git")

    return key(a) == key(b)


def resolve_sources(items: list[str]) -> tuple[list[Source], list[tuple[str, str]]]:
    """``(sources, [(item, why not)])``: each item a git URL, a clone (bare or not), or a directory
    whose sub-directories are clones, optionally as ``NAME=SOURCE``. Names must be unique in one
    store."""
    sources: list[Source] = []
    bad: list[tuple[str, str]] = []
    for given in items:
        name_given, item = _named(given)
        if _is_url(item):
            bare = item.split("?", 1)[0].split("#", 1)[0]
            name = bare.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
            sources.append(Source(name_given or name or item, item, url=True))
            continue
        path = Path(item).expanduser()
        if not path.is_dir():
            bad.append((item, "no such directory"))
        elif _is_clone(path):
            sources.append(Source(name_given or path.resolve().name.removesuffix(".git"), str(path.resolve())))
        elif name_given:
            bad.append((item, "a name names one repository: this is a directory of them"))
        else:
            clones = sorted(p for p in path.iterdir() if p.is_dir() and _is_clone(p))
            if not clones:
                bad.append((item, "neither a git repository nor a directory of them"))
            # A link in the directory is followed: the name is the link's, the repository its target.
            sources += [Source(p.name.removesuffix(".git"), str(p.resolve())) for p in clones]
    seen: dict[str, Source] = {}
    unique: list[Source] = []
    for s in sources:
        if s.name in seen:
            if seen[s.name].location != s.location:
                bad.append(
                    (
                        scrub_credentials(s.location),
                        f"another source is named {s.name!r} too ({scrub_credentials(seen[s.name].location)})",
                    )
                )
            continue
        seen[s.name] = s
        unique.append(s)
    return unique, bad


def head_commit(source: Source) -> str:
    """The commit a source's default branch points at now (a URL: asked of the server)."""
    if source.url:
        out = _git(["ls-remote", "--", source.location, "HEAD"], timeout=120).stdout.decode().split()
        if not out:
            raise CodeSightError("the remote has no HEAD")
        return out[0]
    return _git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=source.location).stdout.decode().strip()


@dataclass
class RepoTask:
    """What one task needs: the source, its commit, the store's blobs of its files, and the
    settings of the walk and the model."""

    source: Source
    commit: str
    known: dict[str, str]
    kind: str
    settings: dict[str, Any]
    static_path: str | None = None


@dataclass
class RepoOutput:
    """What a task returns: the rows of changed files, the paths whose rows go, counts."""

    name: str
    commit: str
    rows: Any  # pyarrow.Table
    stale: list[str]
    files: int
    changed: int
    chunks: int
    embedded: int = 0
    cache_hits: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


# Per worker process: the models and chunker, loaded by its first task and kept for the next.
_LOADED: dict[tuple[str, ...], Any] = {}
_LOAD_LOCK = threading.Lock()


def _settings_of(values: dict[str, Any]) -> Settings:
    from codesight_tui.core.config import Settings

    return Settings(**values)


def _models(task: RepoTask) -> tuple[Any, Any, Any]:
    """(chunker, encoder, cache) for this worker, made once."""
    key = (task.kind, task.static_path or "", repr(sorted(task.settings.items())))
    with _LOAD_LOCK:
        if key not in _LOADED:
            from codesight_tui.core.index.cache import EmbeddingCache
            from codesight_tui.core.ingest.chunker import Chunker
            from codesight_tui.core.ingest.tokens import TokenCounter

            info = model_info(_settings_of(task.settings))
            chunker = Chunker(TokenCounter(info.tokenizer_file), info.max_seq_length - 2)
            if task.kind == "static":
                from codesight_tui.core.index.static import is_model_dir, load

                path = Path(task.static_path or "")
                if not is_model_dir(path):  # another machine of the cluster: its own, distilled there once
                    path = static_model_path(_settings_of(task.settings), info)
                encoder, cache = load(path), None
            else:
                from codesight_tui.core.index.embedder import in_process

                settings = _settings_of(task.settings)
                encoder = in_process(info, settings.device, settings.batch_size)
                cache = EmbeddingCache(settings.cache_dir.expanduser(), encoder.name, encoder.dim)
            _LOADED[key] = (chunker, encoder, cache)
        loaded: tuple[Any, Any, Any] = _LOADED[key]
        return loaded


def _checkout(task: RepoTask, work: Path, max_file_size: int) -> Path:
    """The commit's files under ``work/tree`` (``git archive``: read-only on the repository). A
    file over ``max_file_size``, which the walk would skip, is never written out: a 200 MB blob in
    a small pack costs no temporary space."""
    gitdir = task.source.location
    if task.source.url:
        gitdir = str(work / "clone.git")
        _git(
            ["clone", "--quiet", "--bare", "--depth", "1", "--no-tags", "--", task.source.location, gitdir],
            timeout=GIT_TIMEOUT,
        )
        task.commit = _git(["rev-parse", "HEAD^{commit}"], cwd=gitdir).stdout.decode().strip()
    tree = work / "tree"
    tree.mkdir()
    archive = subprocess.Popen(
        ["git", "archive", "--format=tar", task.commit],
        cwd=gitdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **_GIT_ENV},
    )
    assert archive.stdout is not None
    try:
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            # 'data': no links out of the tree, no devices, no absolute paths, no set-uid bits.
            for member in tar:
                if member.issym() or member.islnk():
                    continue  # the walker follows no link either
                if member.isfile() and member.size > max_file_size:
                    continue
                tar.extract(member, tree, filter="data")
    except (tarfile.TarError, OSError) as exc:
        archive.kill()
        raise CodeSightError(f"reading commit {task.commit[:12]} failed: {exc}") from None
    finally:
        err = archive.stderr.read().decode(errors="replace").strip() if archive.stderr else ""
        if archive.wait() != 0:
            raise CodeSightError(f"git archive failed: {err.splitlines()[-1] if err else 'no output'}"[:200])
    return tree


def _blobs(task: RepoTask, work: Path) -> dict[str, str]:
    gitdir = str(work / "clone.git") if task.source.url else task.source.location
    out = _git(["ls-tree", "-r", "-z", "--full-tree", task.commit], cwd=gitdir, timeout=GIT_TIMEOUT).stdout
    blobs: dict[str, str] = {}
    for entry in out.split(b"\0"):
        if b"\t" in entry:
            meta, path = entry.split(b"\t", 1)
            blobs[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return blobs


def _rows(
    task: RepoTask, chunker: Chunker, changed: list[FileEntry], blobs: dict[str, str]
) -> tuple[dict[str, list[Any]], list[str], list[str]]:
    """The changed files' chunks as the store's columns (but the vector), with the text each
    embeds and its key in the embedding cache."""
    from codesight_tui.core.index.indexer import file_batches, prepare_batch
    from codesight_tui.core.ingest.chunker import embed_text

    columns: dict[str, list[Any]] = {name: [] for name in chunks_schema(1).names}
    texts: list[str] = []
    keys: list[str] = []
    for batch in file_batches(changed):
        items, _unreadable, rows, _symbols = prepare_batch(chunker, batch)
        for (entry, language, _masked), fields in zip(items, rows, strict=False):
            for start, end, scope, content, key, terms, digest in fields:
                columns["id"].append(chunk_id(task.source.name, entry.rel_path, start, digest))
                columns["repo"].append(task.source.name)
                columns["commit"].append(task.commit)
                columns["path"].append(entry.rel_path)
                columns["blob"].append(blobs[entry.rel_path])
                columns["language"].append(language)
                columns["start_line"].append(start)
                columns["end_line"].append(end)
                columns["scope"].append(scope)
                columns["content"].append(content)
                columns["words"].append(" ".join((entry.rel_path.replace("/", " "), scope, content, terms)))
                texts.append(embed_text(entry.rel_path, scope, content))
                keys.append(key)
    return columns, texts, keys


def _embed_all(
    texts: list[str], keys: list[str], encoder: Any, cache: EmbeddingCache | None
) -> tuple[np.ndarray, int, int]:
    """A vector for each text: from the cache where it has one, else the model's (and cached);
    with how many were embedded and how many came from the cache."""
    import numpy as np

    vectors = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    embedded = hits = 0
    for k in range(0, len(texts), EMBED_BATCH):
        part, part_keys = texts[k : k + EMBED_BATCH], keys[k : k + EMBED_BATCH]
        got = cache.get_many(part_keys) if cache is not None else {}
        todo = [i for i, key in enumerate(part_keys) if key not in got]
        if todo:
            made = np.asarray(encoder.encode([part[i] for i in todo]), dtype=np.float32)
            if cache is not None:
                cache.put_many([(part_keys[i], made[j]) for j, i in enumerate(todo)])
            for j, i in enumerate(todo):
                vectors[k + i] = made[j]
        for i, key in enumerate(part_keys):
            if key in got:
                vectors[k + i] = got[key]
        embedded += len(todo)
        hits += len(part) - len(todo)
    return vectors, embedded, hits


def index_repository(task: RepoTask) -> RepoOutput:
    """One repository's rows (in a worker process, a Ray worker, or in-process): what changed since
    the rows the store holds (``task.known``), chunked, masked and embedded."""
    import pyarrow as pa

    from codesight_tui.core.ingest.walker import WalkStats, walk
    from codesight_tui.core.languages import is_document

    t0 = time.perf_counter()
    chunker, encoder, cache = _models(task)
    settings = _settings_of(task.settings)
    with tempfile.TemporaryDirectory(prefix="codesight-fleet-") as tmp:
        work = Path(tmp)
        tree = _checkout(task, work, settings.max_file_size)
        blobs = _blobs(task, work)
        stats = WalkStats()
        entries = [
            e
            for e in walk(
                tree,
                max_file_size=settings.max_file_size,
                exclude=list(settings.exclude),
                stats=stats,
                secret_files=tuple(settings.secret_files),
            )
            if not is_document(e.rel_path) and e.rel_path in blobs
        ]
        current = {e.rel_path: blobs[e.rel_path] for e in entries}
        changed = [e for e in entries if task.known.get(e.rel_path) != current[e.rel_path]]
        stale = sorted(p for p, blob in task.known.items() if current.get(p) != blob)
        columns, texts, keys = _rows(task, chunker, changed, current)
        vectors, embedded, hits = _embed_all(texts, keys, encoder, cache)
        schema = chunks_schema(int(encoder.dim))
        columns["vector"] = list(vectors)
        table = (
            pa.Table.from_pydict({name: columns[name] for name in schema.names}, schema=schema)
            if texts
            else schema.empty_table()
        )
        return RepoOutput(
            task.source.name,
            task.commit,
            table,
            stale,
            len(entries),
            len(changed),
            len(texts),
            embedded,
            hits,
            dict(stats.skipped),
            round(time.perf_counter() - t0, 3),
        )


@dataclass
class FleetReport:
    """What one ``codesight fleet index`` run did."""

    repos: int = 0
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0
    changed_files: int = 0
    chunks: int = 0
    stale_files: int = 0
    embedded: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    workers: int = 0
    rows: int = 0
    write_seconds: float = 0.0  # the driver applying rows (deletes, inserts, repos rows)
    index_seconds: float = 0.0  # full-text, scalar and vector indexes, compaction

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["failed"] = [{"repo": r, "error": e} for r, e in self.failed]
        d["write_seconds"] = round(self.write_seconds, 2)
        return d


def _ray(address: str) -> Any:
    """Ray, joined at ``address`` (a cluster's; usage reports off). A run on this machine alone
    uses ``core.store.pool`` instead: Ray 2.60's servers listen on every interface."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine unasked
    os.environ.setdefault("RAY_DISABLE_DOCKER_CPU_WARNING", "1")
    try:
        import ray
    except ImportError:
        raise UsageError("--ray-address needs Ray: pip install 'codesight-tui[fleet]'") from None
    if ray.is_initialized():
        return ray
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as exc:  # noqa: BLE001 - Ray raises many types for an unreachable cluster: one line
        raise CodeSightError(f"cannot join Ray at {address}: {str(exc).splitlines()[0][:200]}") from None
    return ray


def _task_settings(settings: Settings) -> dict[str, Any]:
    keep = (
        "cache_dir",
        "embedding_model",
        "embedding_backend",
        "device",
        "batch_size",
        "max_file_size",
        "exclude",
        "secret_files",
        "static_model",
    )
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in settings.model_dump().items() if k in keep}


def run(
    items: list[str],
    spec: StoreSpec,
    settings: Settings,
    *,
    kind: str = "static",
    address: str | None = None,
    workers: int = 0,
    progress: Callable[[str], None] | None = None,
    local: bool = False,
    gpus: float = 0.0,
) -> FleetReport:
    """Index ``items`` (git URLs, clones, directories of clones) into the store at ``spec``.
    ``workers``: tasks at once (0: the cores here, or the cluster's). ``address``: a Ray cluster to
    run the tasks on; without it they run on worker processes here (``core.store.pool``), and with
    ``local`` in this process, one at a time. ``gpus``: the GPUs (or share of one) each Ray task
    asks for, so that full-model tasks land on a cluster's GPU nodes."""
    if kind not in KINDS:
        raise UsageError(f"unknown model kind {kind!r}: use static or full")
    if gpus and not address:
        raise UsageError(
            "--gpus asks a Ray cluster for GPUs: give --ray-address too (a run here uses the device setting)"
        )
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    report = FleetReport()
    sources, bad = resolve_sources(items)
    report.failed += bad
    report.repos = len(sources) + len(bad)
    if not sources:
        raise UsageError("no repository to index: give git URLs, clones, or a directory of clones")
    ray = None
    # Ray prints what its workers report (a worker that died, say) on standard output, which is
    # the caller's (JSON): it goes to standard error instead.
    with contextlib.redirect_stdout(sys.stderr):
        if address and not local:
            ray = _ray(address)
        try:
            _run(sources, spec, settings, kind, ray, workers, say, report, gpus, local)
        finally:
            if ray is not None:
                ray.shutdown()
    report.seconds = round(time.perf_counter() - t0, 2)
    return report


@dataclass(frozen=True)
class RepoTaskMaker:
    """What every task of one fleet run shares: the model's kind, its settings, the static model."""

    kind: str
    settings: dict[str, Any]
    static_path: str | None

    def task(self, source: Source, commit: str, known: dict[str, str]) -> RepoTask:
        return RepoTask(source, commit, known, self.kind, self.settings, self.static_path)


def _plan(
    sources: list[Source],
    store: FleetStore,
    recorded: dict[str, RepoRecord],
    report: FleetReport,
    say: Callable[[str], None],
    make: RepoTaskMaker,
) -> list[RepoTask]:
    """A task for each repository whose head moved since the store's rows; a namesake from another
    place is refused, a repository whose head cannot be read is recorded as failed."""
    known = store.known_files()
    tasks: list[RepoTask] = []
    for source in sources:
        old = recorded.get(source.name)
        if old is not None and old.source and not same_source(old.source, source.location):
            # A store is shared: a repository's name there is its identity, and another
            # repository with the same last path component must not replace it unasked.
            why = (
                f"the store already holds another repository named {source.name!r} (from {old.source});"
                f" give this one its own name ({source.name}-2={scrub_credentials(source.location)}),"
                f" or `codesight fleet remove {source.name}` first to replace it"
            )
            report.failed.append((source.name, why))
            say(f"{source.name}: refused: {why}")
            continue
        try:
            commit = head_commit(source)
        except CodeSightError as exc:
            report.failed.append((source.name, str(exc)))
            store.record(RepoRecord(source.name, source.location, *_kept(old), error=str(exc)))
            continue
        if old is not None and old.commit == commit and not old.error:
            report.unchanged.append(source.name)
            continue
        tasks.append(make.task(source, commit, known.get(source.name, {})))
    return tasks


def _run(
    sources: list[Source],
    spec: StoreSpec,
    settings: Settings,
    kind: str,
    ray: Any,
    workers: int,
    say: Callable[[str], None],
    report: FleetReport,
    gpus: float = 0.0,
    local: bool = False,
) -> None:
    info = model_info(settings)
    static_path = None
    if kind == "static":
        from codesight_tui.core.index.static import load

        path = static_model_path(settings, info, say)
        static_path, dim = str(path), load(path).dim
    else:
        dim = _full_dim(info)
    store = FleetStore(spec)
    store.prepare(info.name, kind, dim)
    recorded = {r.name: r for r in store.repos()}
    tasks = _plan(sources, store, recorded, report, say, RepoTaskMaker(kind, _task_settings(settings), static_path))
    say(f"{len(tasks)} to index, {len(report.unchanged)} unchanged, {len(report.failed)} failed")

    def done(task: RepoTask, out: RepoOutput | None, error: str | None) -> None:
        old = recorded.get(task.source.name)
        if out is None:
            error = scrub_credentials(error or "failed")
            report.failed.append((task.source.name, error))
            store.record(RepoRecord(task.source.name, task.source.location, *_kept(old), error=error or "failed"))
            say(f"{task.source.name}: failed: {error}")
            return
        t_write = time.perf_counter()
        store.apply(
            RepoRecord(task.source.name, task.source.location, out.commit, time.time(), out.files), out.rows, out.stale
        )
        report.write_seconds += time.perf_counter() - t_write
        report.indexed.append(task.source.name)
        report.files += out.files
        report.changed_files += out.changed
        report.chunks += out.chunks
        report.stale_files += len(out.stale)
        report.embedded += out.embedded
        report.cache_hits += out.cache_hits
        say(f"{task.source.name}: {out.changed} of {out.files} files changed, {out.chunks} chunks, {out.seconds:.1f} s")

    if ray is not None and tasks:
        report.workers = _run_ray(ray, tasks, workers, done, gpus)
    elif local or not tasks:  # --local: in this process, one at a time
        report.workers = 1 if tasks else 0
        for task in tasks:
            try:
                out = index_repository(task)
            except CodeSightError as exc:
                done(task, None, str(exc))
            else:
                done(task, out, None)
    else:
        from codesight_tui.core.index.indexer import cpu_cores
        from codesight_tui.core.store.pool import run_tasks

        report.workers = run_tasks(index_repository, tasks, workers or cpu_cores(), done, preload=__name__)
    finished = store.finish()
    report.rows, report.index_seconds = finished["rows"], finished["index_seconds"]


def _kept(old: RepoRecord | None) -> tuple[str, float, int, int]:
    """What a failed run keeps of a repository's record: the rows are still of its old commit."""
    return (old.commit, old.indexed_at, old.files, old.chunks) if old is not None else ("", 0.0, 0, 0)


def _full_dim(info: Any) -> int:
    from codesight_tui.core.index.embedder import in_process

    encoder = in_process(info)
    return int(encoder.dim)


def _run_ray(
    ray: Any,
    tasks: list[RepoTask],
    workers: int,
    done: Callable[[RepoTask, RepoOutput | None, str | None], None],
    gpus: float = 0.0,
) -> int:
    """Each task on a Ray worker, ``workers`` at once; results applied as they come."""
    resources = ray.cluster_resources()
    slots = workers or max(1, int(resources.get("GPU", 0) / gpus if gpus else resources.get("CPU", 1)))
    # max_retries: a worker that dies (killed, out of memory) has its task run again elsewhere.
    remote = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=3, retry_exceptions=False)(index_repository)
    pending: dict[Any, RepoTask] = {}
    queue: Iterator[RepoTask] = iter(tasks)
    for task in queue:
        pending[remote.remote(task)] = task
        if len(pending) >= slots:
            break
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        task = pending.pop(ref)
        try:
            out = ray.get(ref)
        except Exception as exc:  # the task raised, or its worker died past its retries  # noqa: BLE001
            cause = getattr(exc, "cause", None)
            done(task, None, str(cause if isinstance(cause, CodeSightError) else _why(exc)))
        else:
            done(task, out, None)
        nxt = next(queue, None)
        if nxt is not None:
            pending[remote.remote(nxt)] = nxt
    return slots


def _why(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln:
            return ln.strip()[:300]
    return (lines[-1] if lines else type(exc).__name__)[:300]
