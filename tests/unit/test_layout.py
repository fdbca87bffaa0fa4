"""The package's shape, held by tests: no import cycle between its modules (deferred imports
counted), no file over 800 lines, no function over 80 (issue 67, items 3 and 4)."""

from __future__ import annotations

from pathlib import Path

import grimp


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_package_imports_itself_back() -> None:
    """grimp reads every import statement, those inside functions too; only the imports made for
    type checking alone are left out, as import-linter's contracts leave them."""
    graph = grimp.build_graph("codesight_tui", exclude_type_checking_imports=True)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


PACKAGE = Path(__file__).resolve().parents[2] / "codesight_tui"
TABLES = {"codesight_tui/cli/parser.py:build_parser"}  # the argument parser's table: one long list, read top down


def test_no_file_of_the_package_is_over_800_lines() -> None:
    """Issue 67: a module says what it is in its first line and stays under about 800 lines."""
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in PACKAGE.rglob("*.py")
        if (n := p.read_text(encoding="utf-8").count("\n")) > 800
    }
    assert long == {}


def test_no_function_of_the_package_is_over_80_lines() -> None:
    """Issue 67: a function past 80 lines is split into steps with names (the parser's table aside)."""
    import ast

    long = {}
    for p in PACKAGE.rglob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                where = f"{p.relative_to(PACKAGE.parent)}:{node.name}"
                if node.end_lineno - node.lineno + 1 > 80 and where not in TABLES:
                    long[where] = node.end_lineno - node.lineno + 1
    assert long == {}
