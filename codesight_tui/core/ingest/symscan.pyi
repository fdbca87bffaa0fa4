from typing import Any

TREE_SITTER: str

def walk(tree: Any, flags: bytes, callee: bytes, compound: bool, /) -> tuple[bytes, bytes] | None: ...
def pack(
    data: bytes, names: bytes, starts: Any, ends: Any, parents: Any, def_lines: Any, names_at: set[tuple[str, int]], /
) -> tuple[str, bytes, bytes, bytes, bytes]: ...
