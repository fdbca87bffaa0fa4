"""One settings object for every surface: ``CODESIGHT_*`` environment variables plus a TOML file.

Precedence, highest first: explicit keyword arguments, environment variables, the TOML file
(``CODESIGHT_CONFIG`` or ``~/.config/codesight/config.toml``), then the defaults below.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from codesight_tui.core.modes import Mode
from codesight_tui.core.redact import SECRET_FILES

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def default_config_file() -> Path:
    """Where the optional TOML config file lives (``CODESIGHT_CONFIG`` overrides it)."""
    explicit = os.environ.get("CODESIGHT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "codesight" / "config.toml"


class Settings(BaseSettings):
    """All of codesight's knobs. Every field is also ``CODESIGHT_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="CODESIGHT_", extra="ignore")

    data_dir: Path = Field(
        default_factory=lambda: Path.home() / ".codesight" / "data",
        description="Root under which each repository gets its own index directory.",
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path.home() / ".codesight" / "cache",
        description="Shared, content-addressed embedding cache (one database per model).",
    )
    cache_max_mb: int = Field(
        default=4096,
        ge=1,
        description="Embedding cache size cap per model (MB); the"
        " least recently used vectors go when an index run finds it larger.",
    )
    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description="sentence-transformers model name or local path; the default is bundled.",
    )
    static_model: str = Field(
        default="auto",
        description="The static tier (fast semantic search without torch): 'auto' is the one"
        " shipped in the package (trained on code for retrieval) with the bundled model, else one distilled"
        " from embedding_model once per machine; 'distilled' always distils; a path names a model2vec model"
        " folder; 'off' turns it off.",
    )
    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        default="auto", description="Where the model runs: auto picks cuda, then mps, then cpu."
    )
    embedding_backend: Literal["auto", "torch", "onnx", "onnx-int8"] = Field(
        default="auto",
        description="How the full model runs: 'torch' is sentence-transformers; 'onnx' an"
        " export of it run by ONNX Runtime, made once, offline (the same vectors; loads in 0.4 s, not 8);"
        " 'onnx-int8' the same with int8 weights (about 1.5x the texts/s on a CPU, slightly different"
        " vectors). 'auto' is onnx on a CPU, torch on a GPU.",
    )
    batch_size: int = Field(
        default=0, ge=0, description="Embedding batch size (0: 32 on CPU with torch, 1 with onnx, 256 on GPU)."
    )
    max_file_size: int = Field(default=1_000_000, ge=1, description="Files larger than this (bytes) are skipped.")
    max_document_size: int = Field(
        default=50_000_000, ge=1, description="PDF, DOCX and PPTX files larger than this (bytes) are skipped."
    )
    document_timeout: float = Field(
        default=60.0,
        gt=0,
        description="Seconds one document may take to read;"
        " a file that takes longer is skipped (status says so) until it changes.",
    )
    exclude: list[str] = Field(default_factory=list, description="Extra gitignore-style patterns to skip.")
    secret_files: list[str] = Field(
        default_factory=lambda: list(SECRET_FILES),
        description="Files never indexed because their names"
        " say they hold secrets (gitignore-style: .env*, *.pem, *.key, id_rsa*, .npmrc, .netrc,"
        " credentials*.json, .ssh/, ...). Set [] to index them; secrets inside other files are masked anyway.",
    )
    document_memory_mb: int = Field(
        default=2048,
        ge=256,
        description="Memory (address space, MB) the"
        " child process that reads one PDF, DOCX or PPTX may use; a document"
        " that needs more is skipped.",
    )
    rrf_k: int = Field(
        default=30,
        ge=1,
        description="Reciprocal Rank Fusion constant (30 measured better"
        " than 15, 20, 40, 60 and 120 on the polyglot set and the devset).",
    )
    retriever_depth: int = Field(
        default=80,
        ge=1,
        description="How many hits each retriever contributes"
        " (80 measured better than 20, 40 and 60; 120 adds little).",
    )
    default_mode: Mode = "hybrid"
    full_model: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Whether index runs (the TUI's, MCP's, `codesight index`) embed every chunk"
        " with the full model: 'auto' where it runs on a GPU (minutes) or the static tier is off, not on a"
        " CPU, where it takes 40"
        " minutes a large repository and its hybrid answer did not beat BM25 + the static tier by 0.01 on"
        " every measured set (benchmarks/README.md, issue 49); 'on' always; 'off' never. Searches use its"
        " vectors wherever an index has them; `codesight index --full` computes them once.",
    )
    ranking: Literal["stack", "plain"] = Field(
        default="stack", description="Hybrid ranking: the ranking stack on top of RRF, or plain RRF."
    )
    integrity_check_hours: float = Field(
        default=24.0,
        ge=0,
        description="Every index run over the whole tree checks the index file for damage"
        " (SQLite quick_check, about 1 ms per MB), and every run probes the tables a search reads (0.1 ms);"
        " a watcher's batches make the full check when the last one is older than this (0: every batch).",
    )
    fleet_store: str | None = Field(
        default=None,
        description="A fleet store (core.fleet: a path or s3://, gs://, az:// URI) that search,"
        " the TUI and MCP search beside the local index (also --store).",
    )
    fleet_endpoint: str | None = Field(
        default=None,
        description="An S3-compatible endpoint for fleet_store (MinIO, Ceph); credentials come"
        " from the usual AWS_* variables.",
    )
    repos: list[str] = Field(
        default_factory=list,
        description="A saved set of repositories: `codesight search --all` searches them"
        " together, and `codesight mcp` serves them beside the current repository.",
    )
    editor: str | None = Field(
        default=None, description="Command template for opening a hit, e.g. 'nvim +{line} {path}'."
    )
    viewer: str | None = Field(
        default=None,
        description="Command template for opening a PDF, DOCX or PPTX hit, e.g. 'zathura"
        " --page={page} {path}' (default: xdg-open, or open on macOS, which take no page).",
    )

    service: Literal["auto", "off"] = Field(
        default="auto",
        description="'auto': `codesight search` and `related` are answered by a warm service"
        " of yours (started on first use, on a Unix socket only you can use) in tens of milliseconds;"
        " 'off': every command runs in its own process.",
    )
    service_idle_minutes: float = Field(
        default=30.0, ge=0, description="The service exits after this long without a call (0: never)."
    )

    llm_backend: Literal["", "anthropic", "openai", "azure", "ollama"] = Field(
        default="",
        description="Where `ask` sends a question and its sources: anthropic, openai, azure or"
        " ollama. Empty: `ask` is off, and nothing ever opens a network connection.",
    )
    llm_model: str | None = Field(
        default=None,
        description="The model (Azure: the deployment); default per back"
        " end: claude-sonnet-4-5, gpt-4o-mini, llama3.2.",
    )
    llm_api_key: SecretStr | None = Field(
        default=None,
        description="Overrides ANTHROPIC_API_KEY, OPENAI_API_KEY or AZURE_OPENAI_API_KEY; never logged or shown.",
    )
    llm_base_url: str | None = Field(
        default=None, description="Overrides ANTHROPIC_BASE_URL, OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT or OLLAMA_HOST."
    )
    llm_timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for the back end.")
    ask_top_k: int = Field(default=8, ge=1, le=50, description="Search hits given to the LLM as sources.")
    ask_max_seconds: float = Field(
        default=300.0,
        gt=0,
        description="Longest time one answer may stream; it is cut there (and at 32,000 characters) with a note.",
    )
    keymap: dict[str, str] = Field(
        default_factory=dict,
        description="The terminal UI's keys: a [keymap] table of binding ids (F1 lists them) and the keys"
        ' each takes instead, e.g. "app.ask" = "ctrl+k" or app.filter = "f7,ctrl+f" (dotted keys are'
        " read as the ids they spell).",
    )

    @field_validator("keymap", mode="before")
    @classmethod
    def _flat_keymap(cls, value: object) -> object:
        """TOML reads ``app.ask = "f3"`` as the table ``{"app": {"ask": "f3"}}``: both are the id ``app.ask``."""
        if not isinstance(value, dict):
            return value
        flat: dict[str, object] = {}
        for key, keys in value.items():
            if isinstance(keys, dict):
                nested = cls._flat_keymap(keys)
                assert isinstance(nested, dict)
                flat.update({f"{key}.{inner}": v for inner, v in nested.items()})
            else:
                flat[str(key)] = keys
        return flat

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=default_config_file())
        return (init_settings, env_settings, toml)


def load_settings(**overrides: object) -> Settings:
    """Build the settings, turning a malformed config into a readable ``CodeSightError``."""
    from pydantic import ValidationError

    from codesight_tui.core.errors import UsageError

    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}  # pydantic checks each
    try:
        return Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "config"
        raise UsageError(f"invalid setting {where}: {first.get('msg')}") from None
    except (OSError, ValueError) as exc:  # unreadable or malformed TOML file
        raise UsageError(f"cannot read config {default_config_file()}: {exc}") from None
