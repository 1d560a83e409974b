"""monitor.text.safe: scraped strings reach the terminal literally."""

from __future__ import annotations

import io
import sys
import unicodedata

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ptmon.monitor.text import mask_secrets, safe


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


# Look-alikes: each reads as "trainer" (or nothing) on screen unless escaped.
INVISIBLE = [
    ("train\u200ber", "train\\u200ber"),  # zero-width space
    ("train\u200cer", "train\\u200cer"),  # zero-width non-joiner
    ("train\u200der", "train\\u200der"),  # zero-width joiner
    ("train\u2060er", "train\\u2060er"),  # word joiner
    ("\ufefftrainer", "\\ufefftrainer"),  # BOM / zero-width no-break space
    ("train\u00ader", "train\\u00ader"),  # soft hyphen
    ("train\u3164er", "train\\u3164er"),  # Hangul filler
    ("train\u115f\u1160er", "train\\u115f\\u1160er"),  # Hangul choseong/jungseong fillers
    ("train\uffa0er", "train\\uffa0er"),  # halfwidth Hangul filler
    ("trainer\U000e0041\U000e0042", "trainer\\U000e0041\\U000e0042"),  # tag characters spelling "AB"
    ("train\ufe0fer", "train\\ufe0fer"),  # variation selector 16
    ("train\U000e0100er", "train\\U000e0100er"),  # variation selector 17
    ("train\u034fer", "train\\u034fer"),  # combining grapheme joiner
    ("train\u2062er", "train\\u2062er"),  # invisible times
    ("bad\ud800", "bad\\ud800"),  # a lone surrogate (a JSON escape) could not even be printed
]


@pytest.mark.parametrize(("raw", "shown"), INVISIBLE)
def test_invisible_characters_become_visible_escapes(raw: str, shown: str) -> None:
    assert safe(raw) == shown
    assert safe(raw) != "trainer"


def test_every_format_character_is_escaped() -> None:
    # Unicode category Cf (format characters): none of them draws text. If a newer Python's Unicode
    # adds some, this names them so monitor/text.py's table can follow.
    missing = [hex(c) for c in range(sys.maxunicode + 1)
               if unicodedata.category(chr(c)) == "Cf" and safe(chr(c)) == chr(c)]
    assert missing == []


# Emoji whose width depends on a multi-character sequence: Rich and terminals count those
# differently (a VS16 heart is 1 cell to one, 2 to the other), so a row shifts and eats a border.
SEQUENCES = ["\u2764\ufe0f", "\u263a\ufe0f", "#\ufe0f\u20e3", "\U0001f3f3\ufe0f\u200d\U0001f308",
             "\U0001f468\u200d\U0001f469\u200d\U0001f467", "a\u200db", "\u2764\ufe0e"]


@pytest.mark.parametrize("raw", SEQUENCES)
def test_cell_width_is_the_sum_of_the_characters_widths(raw: str) -> None:
    # Escaped, the sequence is plain characters whose widths add up: no terminal can disagree.
    shown = safe(raw)
    assert cell_len(shown) == sum(cell_len(ch) for ch in shown)
    assert shown.isascii() or "\\u" in shown


def test_plain_emoji_and_scripts_still_pass() -> None:
    for s in ("\U0001f680", "\U0001f44d\U0001f3fd", "\U0001f1fa\U0001f1f8", "e\u0301", "\u0627\u0644\u0639",
              "\u0928\u092e\u0938\u094d\u0924\u0947"):
        assert safe(s) == s


@pytest.mark.parametrize(("text", "shown"), [
    ("http://h:9100/metrics?token=abc123", "http://h:9100/metrics?token=***"),
    ("http://h/m?api_key=k&module=http_2xx&target=trainer:9100", "http://h/m?api_key=***&module=http_2xx&target=trainer:9100"),
    ("http://h/m?Access_Token=a&password=b&secret=c&key=d", "http://h/m?Access_Token=***&password=***&secret=***&key=***"),
    ("http://h/m?private_token=a&x-api-key=b", "http://h/m?private_token=***&x-api-key=***"),
    ("GET 'http://h/m?X-Amz-Signature=f00&x=1': 403", "GET 'http://h/m?X-Amz-Signature=***&x=1': 403"),
    ("http://h/m?keyboard=qwerty&monkey=1", "http://h/m?keyboard=qwerty&monkey=1"),  # not secret names
    ("key=value outside a query", "key=value outside a query"),
])
def test_secret_query_values_are_masked_and_other_parameters_kept(text: str, shown: str) -> None:
    assert mask_secrets(text) == shown
