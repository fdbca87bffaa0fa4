"""Ranking step 8 (issue 69): of a question's first page, the file that the others use is where its
topic is built, and it rises; the names come from the index's own symbols (``Store.file_links``)."""

from pathlib import Path

import pytest

from codesight_tui import CodeSight
from codesight_tui.core.config import Settings
from codesight_tui.core.modes import Vectors
from codesight_tui.core.search import ranking
from codesight_tui.core.search.ranking import analyze, asks_where, central
from codesight_tui.core.store.symbols import FileLinks

CONNECTOR = '''"""The {kind} queue connector."""

from jobs.manager import QueueManager


class {name}Connector:
    """Connect to a {kind} queue and open a queue connection for the worker."""

    def connect(self, config):
        """Open the queue connection: connect with the config's {kind} connection settings."""
        connection = open_connection(config["{kind}"], queue=config.get("queue"))
        QueueManager.register("{kind}", connection)
        return connection
'''

MANAGER = '''"""Jobs and their workers."""


class QueueManager:
    """Resolves a named queue to its connection, made once by the connector registered for it."""

    connectors = {}
    resolved = {}

    @classmethod
    def register(cls, name, connector):
        cls.connectors[name] = connector

    def resolve(self, name):
        if name not in self.resolved:
            self.resolved[name] = self.connectors[name].connect(self.config[name])
        return self.resolved[name]
'''

KINDS = (("redis", "Redis"), ("database", "Database"), ("sync", "Sync"), ("beanstalk", "Beanstalk"))


@pytest.fixture
def jobs(tmp_path: Path, settings: Settings) -> CodeSight:
    """Four connectors that each say "queue connection" more often than the manager they all use,
    indexed with the shipped static table (BM25 + static: fast mode)."""
    files = {"jobs/manager.py": MANAGER}
    files |= {f"jobs/connectors/{kind}.py": CONNECTOR.format(kind=kind, name=name) for kind, name in KINDS}
    root = tmp_path / "r"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cs = CodeSight(root, settings=settings.model_copy(update={"static_model": "auto"}))
    cs.index(embed=False, static=True)
    return cs


def _first(cs: CodeSight, query: str, mode: str = "hybrid") -> str:
    return cs.search(query, top_k=5, mode=mode, vectors=Vectors.STATIC)[0].path


def test_the_file_the_first_page_uses_answers_a_question(jobs: CodeSight, monkeypatch: pytest.MonkeyPatch) -> None:
    question = "how are queue connections resolved"
    assert jobs.search(question, vectors=Vectors.STATIC).retrievers == ["bm25", "static"]
    assert _first(jobs, question) == "jobs/manager.py"
    # A description asks for one piece of code, and bm25 mode has no static list: neither gets the step.
    description = "open a queue connection with the connection settings"
    described = _first(jobs, description)
    lexical = _first(jobs, question, mode="bm25")
    monkeypatch.setattr(ranking, "CENTRAL_BONUS", 0.0)
    assert _first(jobs, question).startswith("jobs/connectors/")  # without the step a connector wins
    assert (_first(jobs, description), _first(jobs, question, mode="bm25")) == (described, lexical)


def test_file_links_are_the_names_each_file_defines_and_uses(jobs: CodeSight) -> None:
    links = jobs.store.file_links(["jobs/manager.py", "jobs/connectors/redis.py", "nope.py"])
    assert set(links) == {"jobs/manager.py", "jobs/connectors/redis.py"}
    assert {"QueueManager", "register", "resolve"} <= links["jobs/manager.py"].defines
    assert {"RedisConnector", "connect"} <= links["jobs/connectors/redis.py"].defines
    assert "QueueManager" in links["jobs/connectors/redis.py"].uses
    assert "RedisConnector" not in links["jobs/manager.py"].uses
    assert jobs.store.file_links([]) == {}


def _links(defines: set[str], uses: set[str]) -> FileLinks:
    return FileLinks(frozenset(defines), frozenset(uses))


def test_central_counts_the_others_that_use_a_name_one_file_alone_defines() -> None:
    links = {
        "hub.py": _links({"Registry", "get"}, set()),
        "a.py": _links({"Alpha"}, {"Registry", "Shared"}),
        "b.py": _links({"Beta", "Shared"}, {"Registry", "get"}),
        "c.py": _links({"Gamma", "Shared"}, {"Alpha", "get"}),
    }
    # hub.py: used by a and b (Registry); a.py by c (Alpha). ``get`` is too short to tie files, and
    # ``Shared`` is defined twice on the page, so it ties no one; a path with no symbols is left out.
    assert central(["hub.py", "a.py", "b.py", "c.py", "notes.md"], links) == {"hub.py": 2 / 3, "a.py": 1 / 3}
    assert central(["hub.py"], links) == {} and central([], links) == {}


def test_a_type_split_over_files_is_owned_by_the_file_named_after_it() -> None:
    # Swift extensions and C# partial classes define the type again in files named as its parts.
    links = {
        "Sources/Application+Servers.swift": _links({"Application", "Servers"}, {"Application", "Storage"}),
        "Sources/Application.swift": _links({"Application", "Storage"}, {"Storage"}),
        "Sources/Application+Sessions.swift": _links({"Application", "Sessions"}, {"Application"}),
        "Dapper/SqlMapper.Async.cs": _links({"SqlMapper", "QueryAsync"}, {"SqlMapper"}),
        "Dapper/SqlMapper.cs": _links({"SqlMapper", "Query"}, {"Application"}),
    }
    shares = central(list(links), links)
    assert shares["Sources/Application.swift"] == 3 / 4  # both extensions and SqlMapper.cs use it
    assert shares["Dapper/SqlMapper.cs"] == 1 / 4
    # Two files of one name (Routing/Pipeline.php, Pipeline/Pipeline.php) leave the name to no one,
    # and so does a definer not named as a part of the type.
    same = {
        "Routing/Pipeline.php": _links({"Pipeline"}, set()),
        "Pipeline/Pipeline.php": _links({"Pipeline"}, set()),
        "Routing/Router.php": _links({"Router"}, {"Pipeline"}),
    }
    assert central(list(same), same) == {}
    typed = {
        "lib/option.js": _links({"Option"}, set()),
        "typings/index.d.ts": _links({"Option"}, set()),
        "lib/command.js": _links({"Command"}, {"Option"}),
    }
    assert central(list(typed), typed) == {}


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("how does routing work", True),
        ("Where is the middleware chain built?", True),
        ("what happens when a job fails", True),
        ("  Where's the retry policy built?", True),
        ("whatever the queue holds", False),
        ("split a sequence into rows of N items", False),
        ("how does applyMiddleware wrap dispatch", False),  # it names a symbol: the definition answers
        ("RetryPolicy", False),
        ("", False),
    ],
)
def test_a_question_is_asked_as_one(query: str, asks: bool) -> None:
    assert asks_where(analyze(query)) is asks
