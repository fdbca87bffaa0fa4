from collections.abc import Callable
from typing import Any

def scan(
    match: Callable[..., Any],
    anchor: object,
    group: int,
    data: bytes,
    limit: int,
    every_span: bool,
    first: tuple[int, int] | None,
    make: Callable[..., Any],
    path: str,
    language: str,
    /,
) -> list[Any]: ...
