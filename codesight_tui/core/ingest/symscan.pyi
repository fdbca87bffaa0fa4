from array import array

TREE_SITTER: str

def walk(
    tree: object, flags: bytes, callee: bytes, compound: bool, name_field: int, /
) -> tuple[bytes, bytes] | None: ...
def pack(
    data: bytes,
    names: bytes,
    starts: array[int],
    ends: array[int],
    parents: array[int],
    def_lines: array[int],
    names_at: set[tuple[str, int]],
    /,
) -> tuple[str, bytes, bytes, bytes, bytes]: ...
