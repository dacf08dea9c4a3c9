"""Reading evalh.toml so that bad input is one line naming the file and the line or the key.

`tomllib` reports syntax errors with their line; what it lets through, or fails on with no
line, is caught here:

- a byte that is not UTF-8: the line and column of the byte (not its offset in the file);
- nesting deep enough to exhaust the parser's recursion (thousands of nested inline
  tables or arrays): the line where the nesting passes `MAX_DEPTH`;
- nesting deeper than `MAX_DEPTH` that the parser survived (the run document's encoder
  would not): the line, and the key it is under;
- an integer beyond 64 bits (TOML's integers are 64-bit; the parser keeps any size, and
  the run document's encoder refuses them): the key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from evalh.errors import ConfigError

MAX_DEPTH = 64
"""Tables and arrays nested deeper than this are refused (a real config nests a handful)."""
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file, or ConfigError with one line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8: byte 0x{data[exc.start]:02x} at column "
                          f"{column} ({exc.reason}); save the file as UTF-8") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        deep = deep_line(text, MAX_DEPTH)
        at = f":{deep}" if deep else ""
        raise ConfigError(f"{path}{at}: invalid TOML: tables or arrays nested more than "
                          f"{MAX_DEPTH} levels deep") from None
    check_values(path, raw, text)
    return raw


def check_values(path: Path, raw: dict[str, Any], text: str = "") -> None:
    """Refuse integers beyond 64 bits and nesting beyond `MAX_DEPTH`, naming the key (and,
    for nesting, the line when `text` is given)."""
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            if not _INT_MIN <= value <= _UINT_MAX:
                digits = str(value)
                shown = digits if len(digits) <= 40 else digits[:37] + "..."
                raise ConfigError(f"{path}: {where}: integer {shown} does not fit in 64 bits")
            continue
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                line = deep_line(text, MAX_DEPTH) if text else None
                parts = where.split("[", 1)[0].split(".")[:3]
                raise ConfigError(f"{path}{f':{line}' if line else ''}: {'.'.join(parts)}: tables or "
                                  f"arrays nested more than {MAX_DEPTH} levels deep")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                sub = f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where else str(key))
                stack.append((item, sub, depth + 1))


def deep_line(text: str, limit: int) -> int | None:
    """The line where `[`/`{` nesting first passes `limit`, strings and comments skipped."""
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if ch == '"' and text[j] == "\\":
                    j += 1
                j += 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth -= 1
        i += 1
    return None
