"""The core must never import textual, so the CLI, the MCP server and the API reuse it unchanged."""

import ast
import subprocess
import sys
from pathlib import Path

import codesight_tui

CORE = Path(codesight_tui.__file__).parent / "core"


def test_core_has_no_textual_import_statement() -> None:
    for py in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "textual" or n.startswith("textual.") for n in names), py


def test_importing_the_whole_core_loads_no_textual() -> None:
    dotted = (p.relative_to(CORE).with_suffix("").as_posix().replace("/", ".") for p in CORE.rglob("*.py"))
    mods = [f"codesight_tui.core.{d}".removesuffix(".__init__") for d in dotted]
    code = "import sys\n" + "".join(f"import {m}\n" for m in mods) + "print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_no_private_name_is_imported_across_modules() -> None:
    """Issue 50: what one module keeps private (a leading underscore) no other module imports;
    what another module needs is public."""
    package = CORE.parent
    found = []
    for py in package.rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codesight_tui"):
                found += [
                    f"{py.relative_to(package)}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert found == []


def test_the_layer_contracts_hold() -> None:
    """The import-linter contracts of pyproject.toml (the engine's layers, no cycle, no surface in
    the engine), as CI checks them."""
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        capture_output=True,
        text=True,
        check=False,
        cwd=CORE.parent.parent,
    )
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout[-2000:]
