"""The fleet store: LanceDB tables at a URI (a local path, or ``s3://``, ``gs://``, ``az://``
object storage) that any number of readers share, and the search over them.

``core.fleet.job`` builds the tables (tasks over git commits, on this machine's cores or a Ray
cluster); ``core.fleet.Fleet`` is the public face. Three tables:

- ``chunks``: one row per chunk of every repository's indexed commit: its repository and commit,
  path, the file's git blob id (the content hash re-indexing compares), lines, scope, language,
  text, the words full-text search reads (path, scope, text and identifier parts) and its vector;
- ``repos``: one row per repository: where it comes from, the commit its rows are of, when, how
  many files and chunks, and the last failure;
- ``meta``: which model made the vectors (``static`` or ``full``) and their size.

A repository's rows are replaced file by file (rows of changed and removed files deleted, new ones
inserted by chunk id, which is a hash of their content and place), and its ``repos`` row is
written last: a job killed anywhere leaves rows that agree with some commit's files, and the next
run, seeing the old commit, completes it. Search runs the same ranking stack as a local index
(``core.search.ranking.rerank``) over the store's BM25 and vector lists.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesight_tui.core.errors import CodeSightError, UsageError
from codesight_tui.core.ingest.paths import tree_bytes
from codesight_tui.core.redact import scrub_credentials
from codesight_tui.core.search.related import RelatedSource
from codesight_tui.core.store.store import ChunkRow, path_matches
from codesight_tui.core.text import query_terms

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


CHUNKS, REPOS, META = "chunks", "repos", "meta"
KINDS = ("static", "full")
SCHEMA_VERSION = "1"
DELETE_BATCH = 400  # paths per delete predicate
# Versions a run leaves are removed by a later run once this old: a reader in the middle of one
# (a search that opened it) never has its files taken away.
CLEANUP_AFTER = timedelta(minutes=10)
READ_CONSISTENCY_S = 30  # a reader checks for a newer version of the tables at most this often
VECTOR_INDEX_ROWS = 100_000  # an approximate (IVF_PQ) vector index above this many rows; exact below


@dataclass(frozen=True)
class StoreSpec:
    """Where a fleet store is, and how to reach it. ``uri``: a local path or ``s3://bucket/prefix``
    (``gs://``, ``az://``). Credentials come from each cloud's usual environment variables
    (``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, ``GOOGLE_APPLICATION_CREDENTIALS``, ...);
    ``endpoint`` names an S3-compatible server (MinIO, Ceph, a test server)."""

    uri: str
    endpoint: str | None = None

    @property
    def remote(self) -> bool:
        return "://" in self.uri and not self.uri.startswith("file://")

    def location(self) -> str:
        if self.remote:
            return self.uri
        return str(Path(self.uri.removeprefix("file://")).expanduser().resolve())

    def storage_options(self) -> dict[str, str]:
        options: dict[str, str] = {}
        if self.uri.startswith("s3://"):
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            if self.endpoint:
                options["aws_endpoint"] = self.endpoint
                if self.endpoint.startswith("http://"):
                    options["allow_http"] = "true"
                region = region or "us-east-1"
            if region:
                options["aws_region"] = region
        if self.remote:  # an unreachable store is said in seconds, not after minutes of retries
            options.update({"connect_timeout": "5s", "client_max_retries": "1", "client_retry_timeout": "10"})
        return options


def chunk_id(repo: str, path: str, start_line: int, content_hash: str) -> int:
    """A chunk's id in the store: a 62-bit hash of its repository, path, first line and content,
    so the same chunk written twice (a run killed after its rows and before its ``repos`` row) is
    the same row."""
    digest = hashlib.blake2b(f"{repo}\0{path}\0{start_line}\0{content_hash}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def sql_quote(value: str) -> str:
    """``value`` as an SQL string literal in a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')``, quoted; ``false`` for no values."""
    quoted = [sql_quote(v) for v in values]
    return f"{column} IN ({', '.join(quoted)})" if quoted else "false"


@dataclass
class RepoRecord:
    """A ``repos`` row."""

    name: str
    source: str
    commit: str = ""
    indexed_at: float = 0.0
    files: int = 0
    chunks: int = 0
    error: str = ""  # the last run's failure; the rows (if any) are still those of ``commit``

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "commit": self.commit,
            "indexed_at": self.indexed_at,
            "files": self.files,
            "chunks": self.chunks,
            "error": self.error,
        }


def chunks_schema(dim: int) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.int64()),
            ("repo", pa.string()),
            ("commit", pa.string()),
            ("path", pa.string()),
            ("blob", pa.string()),
            ("language", pa.string()),
            ("start_line", pa.int32()),
            ("end_line", pa.int32()),
            ("scope", pa.string()),
            ("content", pa.string()),
            ("words", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def _repos_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("name", pa.string()),
            ("source", pa.string()),
            ("commit", pa.string()),
            ("indexed_at", pa.float64()),
            ("files", pa.int64()),
            ("chunks", pa.int64()),
            ("error", pa.string()),
        ]
    )


_CONNECTIONS: dict[StoreSpec, Any] = {}
# Opened tables and the indexed repositories' names, per store and process: a warm reader (the
# service, MCP, the TUI) opens each table once and reads the names every READ_CONSISTENCY_S.
_TABLES: dict[tuple[StoreSpec, str], Any] = {}  # guarded by _TABLES_LOCK: the service's threads share it
_TABLES_LOCK = threading.Lock()
_NAMES_SEEN: dict[StoreSpec, tuple[float, dict[str, str]]] = {}  # name -> the commit its rows are of
_CONNECT_LOCK = threading.Lock()


_UNREACHABLE: dict[str, float] = {}  # endpoint -> when it last refused: asked again only after REACH_AGAIN_S
REACH_AGAIN_S = 30.0
REACH_TIMEOUT_S = 2.0


def forget_tables(spec: StoreSpec) -> None:
    """Drop the open tables of ``spec`` (they are made anew): under the lock, so that a thread
    opening one meanwhile never finds the dict changing under its feet."""
    with _TABLES_LOCK:
        for key in [k for k in _TABLES if k[0] == spec]:
            del _TABLES[key]


def _reach(spec: StoreSpec) -> None:
    """An S3-compatible endpoint's port, tried before LanceDB is given it: a closed or unreachable
    one is said at once ("cannot reach it"), where LanceDB's client took 6.4 s of retries to say so,
    or, with no credentials in the environment, said "access denied" (its credential chain failed
    first). Remembered for ``REACH_AGAIN_S`` in this process (the warm service, the TUI)."""
    if not spec.remote or not spec.endpoint:
        return
    import socket
    from urllib.parse import urlsplit

    where = f"cannot reach the fleet store {spec.uri} at {spec.endpoint}"
    said = _UNREACHABLE.get(spec.endpoint)
    if said is not None and time.monotonic() - said < REACH_AGAIN_S:
        raise CodeSightError(f"{where}: it refused a moment ago", exit_code=1)
    try:
        url = urlsplit(spec.endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"{spec.endpoint} is not an endpoint URL (http://HOST:PORT)") from None
    try:
        socket.create_connection((url.hostname or "localhost", port), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        _UNREACHABLE[spec.endpoint] = time.monotonic()
        raise CodeSightError(f"{where}: {exc.strerror or 'no answer'}", exit_code=1) from None
    _UNREACHABLE.pop(spec.endpoint, None)


def _connect(spec: StoreSpec) -> Any:
    """One LanceDB connection per store and process (the warm service keeps it between calls)."""
    with _CONNECT_LOCK:
        db = _CONNECTIONS.get(spec)
        if db is None:
            import lancedb

            _reach(spec)
            if not spec.remote and not Path(spec.location()).is_dir():
                # A reader creates nothing (LanceDB's connect would make the directories).
                raise UsageError(
                    f"no fleet store at {spec.location()}: build it with"
                    f" `codesight fleet index SOURCES --store {spec.uri}`"
                )
            try:
                # A long-lived reader (the warm service, MCP, the TUI) sees what a fleet job wrote
                # within this long; without it, LanceDB keeps the version it first opened.
                db = lancedb.connect(
                    spec.location(),
                    storage_options=spec.storage_options() or None,
                    read_consistency_interval=timedelta(seconds=READ_CONSISTENCY_S),
                )
            except Exception as exc:  # unreachable, refused, a malformed URI, an unknown scheme  # noqa: BLE001
                raise explain(exc, spec, "open") from None
            _CONNECTIONS[spec] = db
        return db


_TABLE_DIRS = tuple(f"{name}.lance" for name in (CHUNKS, REPOS, META))


def _claim(spec: StoreSpec) -> None:
    """Make a local store's directory ready for writing: created 0700 (with the parents this
    creates) where it is missing; an existing one must be a store or empty, so that a mistyped
    ``--store`` never writes tables into a repository or a home directory."""
    path = Path(spec.location())
    if not path.exists():
        from codesight_tui.core.private import private_dir

        try:
            private_dir(path)
        except OSError as exc:
            raise CodeSightError(f"cannot create the fleet store {path}: {exc.strerror or exc}", exit_code=1) from None
        return
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory: name a new or empty directory for the fleet store")
    others = sorted(e.name for e in path.iterdir() if e.name not in _TABLE_DIRS)
    if others:
        raise UsageError(
            f"{path} is not a fleet store and not empty (it holds {others[0]}"
            f"{f' and {len(others) - 1} more' if len(others) > 1 else ''}): name a new or empty"
            " directory"
        )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


_CAUSES = (  # what object storage's errors mean, in words (the store's own text is a Rust debug dump)
    (("NoSuchBucket",), "the bucket does not exist", 2),
    (
        ("Failed to get AWS credentials", "Failed to load credentials", "no credentials"),
        "no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
        1,
    ),
    (
        (
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AccessDenied",
            "Access Denied",
            "403",
            "401",
            "ExpiredToken",
            "credential",
        ),
        "access denied: check the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)",
        1,
    ),
    (
        ("Failed to connect", "error sending request", "Connection refused", "dns error", "timed out", "RetryError"),
        "cannot reach it",
        1,
    ),
)


def explain(exc: BaseException, spec: StoreSpec, doing: str) -> CodeSightError:
    """One line for a failure of the store: what it means, where, and the exit code."""
    text = str(exc)
    where = spec.uri + (f" at {spec.endpoint}" if spec.endpoint else "")
    for needles, meaning, code in _CAUSES:
        if any(n in text for n in needles):
            return CodeSightError(f"cannot {doing} the fleet store {where}: {meaning}", exit_code=code)
    return CodeSightError(f"cannot {doing} the fleet store {where}: {_one_line(exc)}", exit_code=1)


@dataclass
class FleetModel:
    """What embeds queries (and chunks) for a store: its kind and the encoder."""

    kind: str
    name: str
    dim: int
    encoder: Any = field(repr=False, default=None)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encoder.encode_query(text)
        return vector

    def known_share(self, words: list[str]) -> float:
        share = getattr(self.encoder, "known_share", None)
        return float(share(words)) if share is not None else 1.0


class FleetStore:
    """One fleet store: the writer's side (``prepare``, ``apply``, ``finish``) and the reader's
    (``repos``, ``search``)."""

    def __init__(self, spec: StoreSpec) -> None:
        self.spec = spec
        self._meta: dict[str, str] | None = None

    # --- tables --------------------------------------------------------------------------------
    def _names(self) -> set[str]:
        db = _connect(self.spec)
        try:
            return set(db.list_tables().tables if hasattr(db, "list_tables") else db.table_names())
        except Exception as exc:  # noqa: BLE001 - LanceDB and the object store raise many types: explain() says which
            raise explain(exc, self.spec, "read") from None

    def _table(self, name: str) -> Any:
        with _TABLES_LOCK:
            table = _TABLES.get((self.spec, name))
        if table is None:
            db = _connect(self.spec)  # its own failures are said already (``_reach``, ``explain``)
            try:
                table = db.open_table(name)
            except Exception as exc:  # noqa: BLE001 - LanceDB and the object store raise many types: explain() says which
                failure = explain(exc, self.spec, "read")
                if failure.exit_code == 1 and not failure.args[0].endswith(_one_line(exc)):
                    raise failure from None  # unreachable or refused: asking again would say the same
                if name not in self._names():
                    raise UsageError(
                        f"{self.spec.uri} is not a fleet store (no {name} table): build it with"
                        " `codesight fleet index SOURCES --store URI`"
                    ) from None
                raise explain(exc, self.spec, "read") from None
            with _TABLES_LOCK:
                _TABLES[(self.spec, name)] = table
        return table

    def exists(self) -> bool:
        return {CHUNKS, REPOS, META} <= self._names()

    def meta(self) -> dict[str, str]:
        """The store's model, kind, dimensions and format; a store in a format newer than this
        codesight's is refused (read or written), as the local index refuses a newer index."""
        if self._meta is None:
            rows = self._table(META).to_arrow().to_pylist()
            meta = {str(r["key"]): str(r["value"]) for r in rows}
            schema = meta.get("schema", SCHEMA_VERSION)
            if not schema.isdigit() or int(schema) > int(SCHEMA_VERSION):
                raise UsageError(
                    f"{self.spec.uri} was written by a newer codesight (store format {schema}; this"
                    f" one reads {SCHEMA_VERSION}): upgrade codesight to use it"
                )
            self._meta = meta
        return self._meta

    def prepare(self, model: str, kind: str, dim: int) -> None:
        """Create the tables if they are missing; refuse vectors of another model or size."""
        import pyarrow as pa

        if not self.spec.remote:
            _claim(self.spec)
        db = _connect(self.spec)
        names = self._names()
        if META in names:
            meta = self.meta()
            if (meta.get("model"), meta.get("kind"), meta.get("dim")) != (model, kind, str(dim)):
                raise UsageError(
                    f"{self.spec.uri} holds vectors of {meta.get('kind')} {meta.get('model')} ({meta.get('dim')}"
                    f" dimensions), not {kind} {model}: index with --model {meta.get('kind')}, or use another store"
                )
        try:
            if CHUNKS not in names:
                db.create_table(CHUNKS, schema=chunks_schema(dim), exist_ok=True)
            if REPOS not in names:
                db.create_table(REPOS, schema=_repos_schema(), exist_ok=True)
            if META not in names:
                # Written last: a store with a meta table has the other two.
                values = {"model": model, "kind": kind, "dim": str(dim), "schema": SCHEMA_VERSION}
                db.create_table(
                    META, data=pa.table({"key": list(values), "value": list(values.values())}), exist_ok=True
                )
        except CodeSightError:
            raise
        except Exception as exc:  # noqa: BLE001 - LanceDB and the object store raise many types: explain() says which
            raise explain(exc, self.spec, "create") from None
        forget_tables(self.spec)
        self._meta = None

    def repos(self) -> list[RepoRecord]:
        rows = self._table(REPOS).to_arrow().to_pylist()
        # scrubbed on the way out too: a store written before credentials were kept out of it
        return sorted(
            (
                RepoRecord(
                    str(r["name"]),
                    scrub_credentials(str(r["source"] or "")),
                    str(r["commit"] or ""),
                    float(r["indexed_at"] or 0.0),
                    int(r["files"] or 0),
                    int(r["chunks"] or 0),
                    scrub_credentials(str(r["error"] or "")),
                )
                for r in rows
            ),
            key=lambda r: r.name,
        )

    def known_files(self) -> dict[str, dict[str, str]]:
        """``{repo: {path: blob}}`` of the rows in the store (what a re-index compares against)."""
        table = self._table(CHUNKS)
        out: dict[str, dict[str, str]] = {}
        data = table.search().select(["repo", "path", "blob"]).limit(None).to_arrow()
        for repo, path, blob in zip(*(data.column(c).to_pylist() for c in ("repo", "path", "blob")), strict=False):
            out.setdefault(repo, {})[path] = blob
        return out

    # --- the writer ----------------------------------------------------------------------------
    def apply(self, record: RepoRecord, rows: pa.Table, stale_paths: list[str]) -> None:
        """One repository's new state: the rows of ``stale_paths`` (changed or removed files) go,
        ``rows`` come in (inserted by id, so a second write of the same rows adds nothing), then
        its ``repos`` row says which commit they are of."""
        chunks = self._table(CHUNKS)
        name = sql_quote(record.name)
        for k in range(0, len(stale_paths), DELETE_BATCH):
            chunks.delete(f"repo = {name} AND {in_list('path', stale_paths[k : k + DELETE_BATCH])}")
        if rows.num_rows:
            chunks.merge_insert("id").when_not_matched_insert_all().execute(rows)
        record.chunks = int(chunks.count_rows(f"repo = {name}"))
        self.record(record)

    def record(self, record: RepoRecord) -> None:
        import pyarrow as pa

        # Whoever can read the store (a shared bucket) reads this row: a source's credentials
        # (``https://user:TOKEN@host/...``) never go into it, nor into its error.
        values = record.to_dict() | {
            "source": scrub_credentials(record.source),
            "error": scrub_credentials(record.error),
        }
        row = pa.Table.from_pylist([values], schema=_repos_schema())
        (self._table(REPOS).merge_insert("name").when_matched_update_all().when_not_matched_insert_all().execute(row))

    def forget(self, names: list[str]) -> None:
        """Take repositories out of the store."""
        for k in range(0, len(names), DELETE_BATCH):
            part = names[k : k + DELETE_BATCH]
            self._table(CHUNKS).delete(in_list("repo", part))
            self._table(REPOS).delete(in_list("name", part))

    def finish(self, cleanup_older_than: timedelta = CLEANUP_AFTER) -> dict[str, Any]:
        """After a run: the full-text index (made, or brought up to date), an approximate vector
        index on a large store, and old versions' files compacted away. Rows not yet in an index
        are searched all the same (by a scan), so a run killed before this loses nothing."""
        chunks = self._table(CHUNKS)
        n = chunks.count_rows()
        indices = {getattr(i, "name", str(i)): i for i in chunks.list_indices()}
        have = {tuple(getattr(i, "columns", ())) for i in indices.values()}
        t0 = time.perf_counter()
        if n and ("words",) not in have:
            chunks.create_fts_index(
                "words", replace=True, with_position=False, stem=True, remove_stop_words=False, ascii_folding=True
            )
        if n and ("id",) not in have:
            chunks.create_scalar_index("id", replace=True)
        if n and ("repo",) not in have:
            chunks.create_scalar_index("repo", index_type="BITMAP", replace=True)
        # Exact search's substrings (``contains``): LanceDB's FM-index. On the 10,000-file tree's
        # 341,856 chunks (176 MB) a selective identifier's filter p50 31 ms against a scan's 224 ms;
        # built in 6.5 s, 164 MB beside a 117 MB table (benchmarks/grep_fleet_index.py).
        if n and ("content",) not in have:
            from lancedb.index import Fm

            chunks.create_index("content", config=Fm(), replace=True)
        if n >= VECTOR_INDEX_ROWS and ("vector",) not in have:
            chunks.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_PQ", replace=True)
        chunks.optimize(cleanup_older_than=cleanup_older_than)
        self._table(REPOS).optimize(cleanup_older_than=cleanup_older_than)
        if not self.spec.remote:  # a local store is its owner's alone (object storage: the bucket's policy)
            from codesight_tui.core.private import tighten

            for table_dir in _TABLE_DIRS:  # what this store wrote, not the directory it was given
                tighten(Path(self.spec.location()) / table_dir)
        return {"rows": n, "index_seconds": round(time.perf_counter() - t0, 2)}

    def size_bytes(self) -> int | None:
        """Bytes the store takes, where it is a local path (object storage: None)."""
        if self.spec.remote:
            return None
        return tree_bytes(Path(self.spec.location()))

    # --- the reader ----------------------------------------------------------------------------
    def commits(self) -> dict[str, str]:
        """Each indexed repository's commit, as its ``repos`` row says (read again every
        READ_CONSISTENCY_S): a row that did not change since an older commit is of this one too."""
        now = time.monotonic()
        seen = _NAMES_SEEN.get(self.spec)
        if seen is None or now - seen[0] > READ_CONSISTENCY_S:
            seen = _NAMES_SEEN[self.spec] = (now, {r.name: r.commit for r in self.repos() if r.commit})
        return seen[1]

    def repo_filter(self, glob: str | None, language: str | None = None) -> tuple[str | None, list[str]]:
        """A SQL filter for the repositories a ``--repo`` glob names (None: all) and, with
        ``language``, that language's chunks alone; and the repositories' names."""
        names = list(self.commits())
        chosen = (
            [n for n in names if fnmatch.fnmatchcase(n, glob) or fnmatch.fnmatchcase(n.lower(), glob.lower())]
            if glob
            else names
        )
        where = in_list("repo", chosen) if glob else None
        if language:
            where = f"({where}) AND language = {sql_quote(language)}" if where else f"language = {sql_quote(language)}"
        return where, chosen

    def find_source(self, target: str, repo: str | None = None) -> RelatedSource:
        """The chunk ``target`` names in the store, for "more like this": ``path:line`` (the
        smallest chunk holding it, in the first repository that has the file) or a symbol (its
        definition); ``repo`` is a glob over the repositories looked in. The source's ``root`` is
        its repository's name, as the store's hits carry it. Raises ``CodeSightError`` (exit
        code 2) with one line where there is none."""
        from codesight_tui.core.search.ranking import definitions
        from codesight_tui.core.search.related import MAX_LINE, parse_location, terms_of

        q = FleetQuery(self, self.repo_filter(repo)[0])
        where = parse_location(target)
        if where is not None:
            path, line = where
            cond = f"path = {sql_quote(path)}" + (f" AND start_line <= {line} AND end_line >= {line}" if line else "")
            rows = q.fetch(f"({q.where}) AND {cond}" if q.where else cond, 400)
            if not rows:
                shown = f"{path}:{line if line != MAX_LINE else 'that far'}" if line else path
                raise UsageError(f"{shown} is in no repository of {self.spec.uri}")
            best = min(rows, key=lambda r: (r["repo"], int(r["end_line"]) - int(r["start_line"]), int(r["start_line"])))
            ids = [int(best["id"])]
        else:
            name = target.strip()
            ids = definitions(q, name) if name else []
            if not ids:
                raise UsageError(f"no file or definition named {name!r} in {self.spec.uri}")
        row, repo_name, _commit = q.rows[ids[0]]
        return RelatedSource(
            repo_name,
            row.path,
            row.start_line,
            row.end_line,
            row.id,
            row.content,
            terms_of(row.content) or row.content[:200],
        )


class FleetQuery:
    """One search of a fleet store: its repository and language filter, and the rows it has read
    (a ``core.search.ranking.Retriever``: BM25, nearest vectors, chunks by id). Made per search, never
    kept on the shared ``FleetStore``."""

    def __init__(self, store: FleetStore, where: str | None) -> None:
        self.store = store
        self.where = where
        self.rows: dict[int, tuple[ChunkRow, str, str]] = {}  # id -> (row, repo, commit)

    def bm25(self, query: str, depth: int, *, language: str | None = None, glob: str | None = None) -> list[int]:
        """BM25 over the store's full-text index, within this search's repositories and language
        (``search`` sets them; ``glob`` is applied by the caller, over the rows)."""
        where = self.where
        terms = query_terms(query)
        if not terms:
            return []
        q = self.store._table(CHUNKS).search(" ".join(terms[:64]), query_type="fts", fts_columns="words")
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select(["id", "_score"]).limit(depth).to_arrow()
        return [int(i) for i in rows.column("id").to_pylist()]

    def nearest(self, vector: np.ndarray, depth: int, *, language: str | None = None) -> list[tuple[int, float]]:
        """The nearest vectors, within this search's repositories and language (as ``bm25``)."""
        where = self.where
        q = self.store._table(CHUNKS).search(vector, vector_column_name="vector").distance_type("cosine")
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select(["id", "_distance"]).limit(depth).to_arrow()
        return [
            (int(i), 1.0 - float(d))
            for i, d in zip(rows.column("id").to_pylist(), rows.column("_distance").to_pylist(), strict=False)
        ]

    def vectors_of(self, rows: list[ChunkRow]) -> dict[int, np.ndarray]:
        """The stored vectors of ``rows``, by id."""
        return self.vectors([r.id for r in rows])

    def in_paths(self, ids: list[int], glob: str) -> list[int]:
        """``ids`` whose chunk's path matches ``glob`` (a vector list knows no paths: it over-fetches)."""
        rows = self.get_chunks(ids)
        return [i for i in ids if i in rows and path_matches(rows[i].path, glob)]

    def fetch(self, where: str, limit: int, with_vectors: bool = False) -> list[dict[str, Any]]:
        columns = ["id", "repo", "commit", "path", "language", "start_line", "end_line", "scope", "content"]
        if with_vectors:
            columns.append("vector")
        q = self.store._table(CHUNKS).search().where(where).select(columns).limit(limit)
        rows: list[dict[str, Any]] = q.to_arrow().to_pylist()
        for r in rows:
            row = ChunkRow(
                int(r["id"]),
                r["path"],
                int(r["start_line"]),
                int(r["end_line"]),
                r["language"] or "",
                r["scope"] or "",
                r["content"],
            )
            self.rows[row.id] = (row, r["repo"], r["commit"])
        return rows

    def texts(self, where: str | None, batch: int = 2048) -> Iterator[list[dict[str, Any]]]:
        """Every chunk ``where`` names (None: every chunk), a batch of rows at a time: its
        repository, commit, path, language, first line and text (exact search's candidates)."""
        columns = ["repo", "commit", "path", "language", "start_line", "content"]
        q = self.store._table(CHUNKS).search()
        if where:
            q = q.where(where)
        for part in q.select(columns).limit(None).to_batches(batch):
            yield part.to_pylist()

    def get_chunks(self, ids: list[int]) -> dict[int, ChunkRow]:
        missing = [i for i in dict.fromkeys(ids) if i not in self.rows]
        for k in range(0, len(missing), 500):
            part = missing[k : k + 500]
            self.fetch(f"id IN ({', '.join(str(i) for i in part)})", len(part))
        return {i: self.rows[i][0] for i in ids if i in self.rows}

    def scope_matches(self, name: str, limit: int = 400) -> list[tuple[int, str, int, str]]:
        """``(id, path, start_line, scope)`` of chunks whose scope holds ``name`` (full-text
        candidates, narrowed here; the caller checks the exact definition)."""
        ids = self.bm25(name, limit)
        folded = name.casefold()
        rows = self.get_chunks(ids)
        return [(i, r.path, r.start_line, r.scope) for i, r in rows.items() if folded in r.scope.casefold()]

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        import numpy as np

        out: dict[int, np.ndarray] = {}
        for k in range(0, len(ids), 500):
            part = ids[k : k + 500]
            for r in (
                self.store._table(CHUNKS)
                .search()
                .where(f"id IN ({', '.join(str(i) for i in part)})")
                .select(["id", "vector"])
                .limit(len(part))
                .to_arrow()
                .to_pylist()
            ):
                out[int(r["id"])] = np.asarray(r["vector"], dtype=np.float32)
        return out
