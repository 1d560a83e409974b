"""monitor.text.safe: scraped strings reach the terminal literally."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from ptmon.monitor.text import safe


def test_printable_text_is_unchanged() -> None:
    s = "worker-3 ünïcode 日本語 🚀 [bold]not markup[/bold] \\x1b"
    assert safe(s) == s


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\nb", "a\\nb"),
        ("a\rb", "a\\rb"),
        ("a\tb", "a\\tb"),
        ("\x00\x07\x7f", "\\x00\\x07\\x7f"),
        ("\x9b2J", "\\x9b2J"),  # C1 CSI
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),  # OSC window title
        ("abc\u202edcba", "abc\\u202edcba"),  # right-to-left override
    ],
)
def test_controls_become_visible_escapes(raw: str, shown: str) -> None:
    assert safe(raw) == shown


def test_no_control_character_survives() -> None:
    every = "".join(chr(c) for c in range(0x00, 0xA0))
    out = safe(every)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in out)


def test_rendered_through_rich_text_nothing_is_interpreted() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system=None, width=200)
    console.print(Text(safe("[red]x[/red]\x1b[2J")))
    out = buf.getvalue()
    assert "[red]x[/red]\\x1b[2J" in out
    assert "\x1b[2J" not in out
