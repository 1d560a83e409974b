"""Make scraped text safe to put on a terminal.

Label values, error messages and run names come from peers we do not
control. Rendered raw, an ESC starts a terminal control sequence (cursor
moves, colour changes, window-title writes, OSC 8 links), a CR overwrites
the line, and a bidi override makes text read backwards. Invisible characters
do the quieter harm: a zero-width space makes ``train\u200ber`` read as
``trainer`` (a look-alike of another target or worker), and a variation
selector or zero-width joiner glues emoji into one glyph whose width Rich and
the terminal disagree about, so the row shifts and eats a border. ``safe``
turns every such character into a visible escape (``\\x1b``, ``\\n``,
``\\u202e``, ``\\u200b``, ``\\U000e0041``), so what reaches the screen is exactly
what the peer sent, shown literally, and its width is the sum of its
characters' widths.

It does not touch Rich markup: print the result as a ``rich.text.Text`` (or
through ``rich.markup.escape``) so ``[bold]`` stays literal too.
"""

from __future__ import annotations

import re

__all__ = ["safe", "mask_secrets", "SECRET_PARAMS"]

# Query-string parameters whose value is a credential (``?token=...`` to a proxy, ``?api_key=`` to a SaaS
# endpoint, an S3-style presigned ``X-Amz-Signature``): the value is replaced by ``***`` wherever a URL is
# shown. A name matches exactly or as the last word of a longer one (``private_token``, ``x-api-key``).
SECRET_PARAMS = ("token", "key", "password", "passwd", "pwd", "pass", "secret", "api_key", "apikey",
                 "access_token", "refresh_token", "id_token", "auth", "authorization", "credential",
                 "credentials", "signature", "sig", "client_secret", "session")
_SECRET_LAST_WORDS = ("token", "key", "password", "passwd", "secret", "signature", "credential", "auth")
_PARAM_RE = re.compile(r"(?P<sep>[?&;])(?P<name>[A-Za-z0-9_.~%-]+)=(?P<value>[^&;#\s'\"<>]*)")


def _secret_name(name: str) -> bool:
    low = name.lower()
    return low in SECRET_PARAMS or any(low.endswith(("_" + w, "-" + w, "." + w)) for w in _SECRET_LAST_WORDS)


def mask_secrets(text: str) -> str:
    """``text`` (a URL, or an error quoting one) with the value of every secret-named query parameter
    (``SECRET_PARAMS``) replaced by ``***``; other parameters (a blackbox probe's ``target=``) stay."""
    if "=" not in text:
        return text
    return _PARAM_RE.sub(lambda m: f"{m['sep']}{m['name']}=***" if _secret_name(m["name"]) and m["value"]
                         else m[0], text)


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
        table[code] = _escape(code)
    for first, last in (*_FORMAT, *_INVISIBLE):
        for code in range(first, last + 1):
            table[code] = _escape(code)
    return table


# Every format character (Unicode category Cf, as of Unicode 15; tests/monitor/test_text.py checks the
# running Python's list): soft hyphen, Arabic number signs, zero-width space and joiners (U+200B-U+200D),
# word joiner and invisible operators (U+2060-U+2064), BOM (U+FEFF), interlinear annotations, tag
# characters (U+E0001, U+E0020-U+E007F: invisible letters that can spell anything). None draws text.
_FORMAT = ((0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
           (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064),
           (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
           (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
# Invisible or width-changing characters outside Cf: Hangul fillers (letters that draw nothing),
# variation selectors (VS1-VS16, VS17-VS256, Mongolian FVS: they switch an emoji between one and two
# cells, which Rich and terminals count differently), the combining grapheme joiner, and lone
# surrogates (from a JSON "\ud800" escape: they cannot even be written to the terminal).
_INVISIBLE = ((0x115F, 0x1160), (0x3164, 0x3164), (0xFFA0, 0xFFA0), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF),
              (0x180B, 0x180F), (0x034F, 0x034F), (0xD800, 0xDFFF))


def _escape(code: int) -> str:
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_TABLE = _build_table()


def safe(s: str) -> str:
    """``s`` with every control, format and invisible character replaced by a visible escape.

    Printable text (any script, emoji) passes through unchanged; the work is
    one ``str.translate`` so it is cheap enough for every label on every frame.
    """
    return s.translate(_TABLE)
