"""Make scraped text safe to put on a terminal.

Label values, error messages and run names come from peers we do not
control. Rendered raw, an ESC starts a terminal control sequence (cursor
moves, colour changes, window-title writes, OSC 8 links), a CR overwrites
the line, and a bidi override makes text read backwards. ``safe`` turns every
such character into a visible escape (``\\x1b``, ``\\n``, ``\\u202e``), so what
reaches the screen is exactly what the peer sent, shown literally.

It does not touch Rich markup: print the result as a ``rich.text.Text`` (or
through ``rich.markup.escape``) so ``[bold]`` stays literal too.
"""

from __future__ import annotations

__all__ = ["safe"]


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    # C0 controls and DEL, C1 controls (0x80-0x9f: 0x9b is a one-byte CSI).
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)):
        table[code] = f"\\x{code:02x}"
    table[ord("\n")] = "\\n"
    table[ord("\r")] = "\\r"
    table[ord("\t")] = "\\t"
    # Bidi embeddings/overrides/isolates and line/paragraph separators reorder
    # or break what the user reads (the "Trojan Source" characters).
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029, 0x200E, 0x200F, 0x061C):
        table[code] = f"\\u{code:04x}"
    return table


_TABLE = _build_table()


def safe(s: str) -> str:
    """``s`` with every control character replaced by a visible escape.

    Printable text (any script, emoji) passes through unchanged; the work is
    one ``str.translate`` so it is cheap enough for every label on every frame.
    """
    return s.translate(_TABLE)
