"""The core must never import textual, so the CLI, the MCP server and the API reuse it unchanged."""

import ast
import subprocess
import sys
from pathlib import Path

import codesight_tui

CORE = Path(codesight_tui.__file__).parent / "core"


def test_core_has_no_textual_import_statement():
    for py in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "textual" or n.startswith("textual.") for n in names), py


def test_importing_the_whole_core_loads_no_textual():
    mods = [f"codesight_tui.core.{p.stem}" for p in CORE.glob("*.py") if p.stem != "__init__"]
    code = "import sys\n" + "".join(f"import {m}\n" for m in mods) + "print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
