"""Prometheus text exposition parser (0.0.4 and OpenMetrics 1.0).

Why a parser of our own: prometheus_client's parser builds metric families
character by character (about 25k samples/s); a monitor that scrapes many
targets every second needs far more, and needs errors a user can read.

The speed comes from the observation Prometheus's scrape cache is built on:
from one scrape to the next a target repeats the same series text and only the
numbers change. :class:`ExpositionParser` (one per target) remembers, for every
line it has parsed, the text before the value (``name{labels}``) and the
parsed ``(name, labels)``; a steady-state line then costs one
``str.rpartition``, one dict lookup and one ``float()`` (and not even that
when the value text is the same as last scrape's, or one seen lately: counts
repeat). Everything else (new series, timestamps, exemplars, metadata, errors)
goes through the careful, slower path, which is where a line's series text is
validated; the fast path only ever pairs an already-validated series text with
a new number, so it accepts nothing the careful path would reject.

A cold parse (a first scrape, ``parse()``, ``ptmon snapshot``) has no cache to
lean on, so it reads the page whole: one possessive pattern (``_PAGE_RE``) over
the text gives one match per line, sorting out the common shapes (a plain
sample line, ``# HELP``, ``# TYPE``, a comment, a blank). When every line is
one of them the page is built a column at a time with C-level ``map``/``zip``
(values, label sets, samples, cache entries, no Python per line); else match
by match; any line of another shape, and every error, goes to the careful path
with its line number, so what is accepted and every error's wording are those
of the careful path.

What is accepted, for both formats: ``# HELP`` / ``# TYPE`` (and ``# UNIT`` in
OpenMetrics), metric names with ``:`` (vLLM's ``vllm:generation_tokens_total``),
upper-case names and labels (DCGM's ``DCGM_FI_DEV_GPU_UTIL{Hostname="..."}``),
label values with the escapes ``\\\\``, ``\\"`` and ``\\n`` (any other backslash
pair kept as written, as the Prometheus server does), any other character
kept literally (control characters and Rich markup are data; the UI escapes
them), spaces and tabs between tokens, a trailing comma in a label set (text
format), ``NaN``/``+Inf``/``-Inf`` and the other spellings Python's
``float()`` and prometheus_client accept (``inf``, ``Infinity``, ...),
timestamps (text format: integer milliseconds; OpenMetrics: seconds; both
returned in seconds), exemplars after `` # `` (ignored) and ``# EOF``.

What is refused as Prometheus refuses it: any whitespace but spaces and tabs
between tokens (``a 1\x0b`` and ``a 1\x0c`` are invalid values, not a value
and blank space), a ``\r`` in OpenMetrics, and an exemplar on a sample that
cannot carry one. In OpenMetrics only a counter's ``_total`` and a
histogram's ``_bucket`` can; the text format has no exemplars at all, but
prometheus_client reads them, so they are ignored there unless ``# TYPE``
makes the sample a gauge, a summary or a histogram's ``_sum``/``_count``.

Memory is bounded per target in bytes, whatever a target sends: a label value
over ``MAX_LABEL_VALUE_BYTES``, a series (name and label set as written) over
``MAX_SERIES_BYTES`` (both from ``ptmon.exporters.schema``, the contract the
exporters keep too) or a page whose series text exceeds
``MAX_PAGE_SERIES_BYTES`` refuses the scrape with a line number, and the cache
holds only the series of the last page parsed.

Choices where formats and parsers differ: label names starting with ``__``
are accepted (Prometheus's own text parser does; ``__name__`` is not, as it
would be a second metric name); quoted UTF-8 names (``{"my.metric"}``) are
reported as unsupported; a ``\r`` before the line end is tolerated in the
text format (CRLF bodies; the Prometheus server refuses them). Not checked,
being about families rather than lines: histogram bucket order, clashing
family names, metadata after samples, duplicate series (all are returned).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping
from itertools import compress, islice, repeat
from operator import length_hint
from typing import Any, NamedTuple, NoReturn

from ptmon.exporters.schema import MAX_LABEL_VALUE_BYTES, MAX_SERIES_BYTES

__all__ = [
    "ACCEPT_HEADER",
    "MAX_PAGE_SERIES_BYTES",
    "ExpositionParser",
    "Labels",
    "ParseError",
    "Sample",
    "is_openmetrics",
    "parse",
]

# What Prometheus itself sends: OpenMetrics 1.0.0 first, then the older
# OpenMetrics draft, then the 0.0.4 text format, then anything.
ACCEPT_HEADER = (
    "application/openmetrics-text;version=1.0.0,"
    "application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,"
    "*/*;q=0.1"
)

# The series text (names and label sets as written) one target's page may hold: what the parser's
# cache keeps for it. A normal page is well under 1 MiB (20,000 series of 200 bytes is 4 MiB).
MAX_PAGE_SERIES_BYTES = 8 * 2**20


class Sample(NamedTuple):
    """One sample line: metric name, labels, value and optional timestamp (seconds)."""

    name: str
    labels: Mapping[str, str]
    value: float
    timestamp: float | None = None


class ParseError(ValueError):
    """An exposition line that is not valid; ``lineno`` is 1-based."""

    def __init__(self, message: str, *, lineno: int, line: str = "") -> None:
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno
        self.line = line


class Labels(dict[str, str]):
    """A series' label set: a dict that refuses to be changed, and hashes.

    A ``dict`` subclass rather than a ``MappingProxyType`` so that reading a
    label is a C-level lookup and the set can be a dict key or a set member.
    "Read-only-ish": the mutating methods raise ``TypeError``, but
    ``dict.__setitem__(labels, ...)`` would still get through; don't.

    An :class:`ExpositionParser` hands out the *same* ``Labels`` object for a
    series on every scrape while the series' text is unchanged, so a consumer
    can cache per-series work (sorting the label items into a store key, say)
    by identity and check it with ``is`` (see :class:`ExpositionParser`).
    """

    __slots__ = ("_hash",)

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash(frozenset(dict.items(self)))
            return self._hash

    def _readonly(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("Labels are read-only; copy with dict(labels) to change them")

    __setitem__ = __delitem__ = __ior__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly

    def __reduce__(self) -> tuple[type[Labels], tuple[dict[str, str]]]:
        return (Labels, (dict(self),))

    def __repr__(self) -> str:
        return f"Labels({dict.__repr__(self)})"


def is_openmetrics(content_type: str | None) -> bool:
    """Whether a response's ``Content-Type`` header announces OpenMetrics.

    Anything else (``text/plain; version=0.0.4``, no header, garbage) means the
    0.0.4 text format, which is also what Prometheus falls back to.
    """
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/openmetrics-text"


def parse(text: str, *, openmetrics: bool | None = None, keep: Callable[[str], bool] | None = None) -> list[Sample]:
    """Parse one exposition; ``openmetrics=None`` detects it by a final ``# EOF``.

    A one-off, cold parse: a scraper should keep one :class:`ExpositionParser`
    per target instead, which is many times faster from the second scrape on.
    ``keep`` is :class:`ExpositionParser`'s.
    """
    return ExpositionParser(keep=keep).parse(text, openmetrics=openmetrics)


# ---------------------------------------------------------------------------
# The careful path: one line at a time, every rule checked.

_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_FULL_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
# One label: name, '=', a quoted value (unrolled loop: fast on 100 KB values), optional comma.
_LABEL_RE = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"\\]*(?:\\.[^"\\]*)*)"[ \t]*(,?)')
_LABEL_NAME_RE = re.compile(r"[ \t]*([^ \t=,}]*)")
# The common line, as exporters write it: 'name{a="x",b="y"} value' with no extra whitespace,
# no timestamp or exemplar. One match instead of a walk; anything else takes the walk.
_PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*(?:\\.[^"\\]*)*"'
_SIMPLE_LINE_RE = re.compile(
    rf"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{{((?:{_PAIR}(?:,{_PAIR})*,?)?)\}})? ([^ \t#{{][^ \t#]*)\Z"
)
_PAIR_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*(?:\\.[^"\\]*)*)"')
_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_WS = " \t"
_WS_SPLIT = re.compile(r"[ \t]+").split  # the only separators: str.split() would also take \x0b, \x0c, \x1c..
_TEXT_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
_OM_TYPES = frozenset({"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"})
_SHOWN = 120  # characters of an offending line or token quoted in an error


def _page_pattern(types: frozenset[str], *, om: bool) -> re.Pattern[str]:
    """One pattern over a whole page (cold parse): exactly one match per line, in order.

    Groups: a common sample line ``name{a="x", b="y"} value`` (series text, name, label block,
    value; a label value with a ``\\`` or ``"`` is left to the careful path, which unescapes),
    a plain ``# HELP name ...`` line or (text format) comment, a plain ``# TYPE name kind`` line
    (the line, name, kind), else the whole line, for the careful path. Every shape matched is one
    the careful path accepts and reads the same way, so what it matches needs no more checks than
    those ``_parse_page`` makes.
    """
    # Possessive repeats (*+): nothing here needs backtracking, and the engine keeps no state for it.
    name = r"[a-zA-Z_:][a-zA-Z0-9_:]*+"
    pair = r'[a-zA-Z_][a-zA-Z0-9_]*+="[^"\\\n]*+"'
    pairs = rf"{pair}(?:,[ \t]*+{pair})*+" + ("" if om else ",?")
    sample = rf"(({name})(?:\{{({pairs})?\}})?) ([^ \t#{{\n][^ \t#\n]*+)"
    # A text-format comment: '#' then no blank, or a first word that is not HELP or TYPE.
    comment = "" if om else r"|#(?![ \t]+(?:HELP|TYPE)(?:[ \t]|$))[^\n]*+"
    help_ = rf"(# HELP {name}(?:[ \t][^\n]*+)?{comment})"
    type_ = rf"(# TYPE ({name}) ({'|'.join(sorted(types))}))"
    return re.compile(rf"^(?:{sample}|{help_}|{type_}|([^\n]*))$", re.M)


# A pair of a label block _PAGE_RE matched: no '"' or '\\' in its value.
_PLAIN_PAIR_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
_PAGE_RE = (_page_pattern(_TEXT_TYPES, om=False), _page_pattern(_OM_TYPES, om=True))
_MISSING: Any = object()
# The cache entry of a series ``keep`` rejected: its value text never equals a line's.
_SKIP: list[Any] = [None, None, object(), None]


def _shorten(text: str, limit: int = _SHOWN) -> str:
    """The line quoted for an error message: repr() shows control characters escaped."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _quote(token: str, limit: int = 40) -> str:
    return repr(token if len(token) <= limit else token[:limit] + "...")


class _LineError(Exception):
    """Raised inside the careful path; turned into ParseError with the line number."""


def _unescape(raw: str) -> str:
    """Replace ``\\\\``, ``\\"`` and ``\\n``; keep any other backslash pair as written.

    That is what the Prometheus server does in both formats (its lexers take
    any escaped character, its replacer knows only those three), and what both
    prometheus_client parsers do: an exporter that writes ``C:\\Program Files``
    unescaped is scraped by Prometheus, so it must not take the target down here.
    """
    return _ESCAPE_RE.sub(_replace_escape, raw)


def _replace_escape(m: re.Match[str]) -> str:
    return _ESCAPES.get(m.group(1), m.group(0))


def _parse_float(token: str, what: str) -> float:
    # float() also takes '1_000', non-ASCII digits and surrounding whitespace ('1\x0b'); Prometheus does not.
    if "_" in token or not token.isascii() or not token.isprintable():
        raise _LineError(f"invalid {what} {_quote(token)}")
    try:
        return float(token)
    except ValueError:
        raise _LineError(f"invalid {what} {_quote(token)}") from None


def _plain_float(token: str) -> float | None:
    """``token`` as ``_parse_float`` reads it, or None where that would raise."""
    if "_" in token or not token.isascii() or not token.isprintable():
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _labels_of_blocks(blocks: tuple[str, ...]) -> list[Labels] | None:
    """The label sets of label blocks ``_PAGE_RE`` matched, or None if one names a label twice.

    Their values hold no '"', so in the usual spelling (``a="x",b="y"``) the blocks joined are
    cut into pairs by ``str.split`` alone and handed out in counts, all without Python per line.
    """
    counts = list(map(str.count, blocks, repeat('="')))
    joined = ",".join(filter(None, blocks))
    if '", ' in joined or '",\t' in joined or ",," in joined or joined.endswith(","):
        pairs = list(map(_PLAIN_PAIR_RE.findall, blocks))  # spaces or a trailing comma
        labels = list(map(Labels, pairs))
    else:
        # One (name, value) per distinct pair text: a page repeats its pairs (worker="w07", le="0.5"), so
        # this splits each once and the page's label sets share their name and value strings.
        pair = _Pairs().__getitem__
        cut = iter(list(map(pair, joined[:-1].split('",'))) if joined else ())
        labels = list(map(Labels, map(islice, repeat(cut), counts)))
    return labels if list(map(len, labels)) == counts else None


class _Pairs(dict[str, tuple[str, str]]):
    """``name="value`` (a label pair of a matched block, its closing quote cut) -> (name, value)."""

    __slots__ = ()

    def __missing__(self, text: str) -> tuple[str, str]:
        name, _, value = text.partition('="')
        pair = self[text] = (name, value)
        return pair


def _parse_timestamp(token: str, *, om: bool) -> float:
    """Seconds: OpenMetrics writes seconds, the text format integer milliseconds."""
    if om:
        ts = _parse_float(token, "timestamp")
        if ts != ts or ts in (math.inf, -math.inf):
            raise _LineError(f"invalid timestamp {_quote(token)}")
        return ts
    digits = token[1:] if token[:1] in "+-" else token
    if not (digits.isascii() and digits.isdigit()):
        raise _LineError(f"invalid timestamp {_quote(token)} (expected integer milliseconds)")
    return int(token) / 1000


class _Line(NamedTuple):
    name: str
    labels: dict[str, str]
    series_end: int  # index just past the series text (name and label set)
    value: float
    timestamp: float | None
    tokens: list[str]  # the value and timestamp tokens as written
    exemplar: bool


def _add_label(labels: dict[str, str], name: str, raw: str, max_value: int | None) -> None:
    if max_value is not None and len(raw) * 4 > max_value:  # cheap pre-check; exact in bytes below
        size = len(raw.encode("utf-8", "surrogatepass"))
        if size > max_value:
            raise _LineError(f"label value of {size} bytes exceeds the limit of {max_value}")
    if name == "__name__":
        raise _LineError("label name '__name__' is reserved for the metric name")
    if name in labels:
        raise _LineError(f"duplicate label name {_quote(name)}")
    labels[name] = _unescape(raw) if "\\" in raw else raw


def _labels_of(block: str, max_value: int | None) -> dict[str, str]:
    """The labels of a block already matched by ``_SIMPLE_LINE_RE``."""
    labels: dict[str, str] = {}
    for name, raw in _PAIR_RE.findall(block):
        _add_label(labels, name, raw, max_value)
    return labels


def _parse_labels(line: str, pos: int, *, om: bool, max_value: int | None) -> tuple[dict[str, str], int]:
    """Parse a label set starting just after '{'; return the labels and the index past '}'."""
    labels: dict[str, str] = {}
    n = len(line)
    match = _LABEL_RE.match
    while True:
        while pos < n and line[pos] in _WS:
            pos += 1
        if pos >= n:
            raise _LineError("label set is not closed with '}'")
        if line[pos] == "}":
            if om and labels and line[pos - 1] == ",":
                raise _LineError("trailing comma in a label set (not allowed in OpenMetrics)")
            return labels, pos + 1
        m = match(line, pos)
        if m is None:
            raise _LineError(_why_label_failed(line, pos))
        name, raw, comma = m.group(1, 2, 3)
        _add_label(labels, name, raw, max_value)
        pos = m.end()
        if not comma:
            while pos < n and line[pos] in _WS:
                pos += 1
            if pos >= n or line[pos] != "}":
                if pos < n and line[pos] == '"':
                    raise _LineError("unexpected '\"' after a label value (an unescaped quote inside it?)")
                raise _LineError("expected ',' or '}' after a label value")


def _why_label_failed(line: str, pos: int) -> str:
    if line[pos] == ",":
        return "empty label (stray comma) in a label set"
    if line[pos] == '"':
        return "quoted (UTF-8) label or metric names are not supported"
    name = _LABEL_NAME_RE.match(line, pos).group(1)  # type: ignore[union-attr]
    if not name:
        return f"expected a label name, found {_quote(line[pos : pos + 10])}"
    if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
        return f"invalid label name {_quote(name)}"
    rest = line[pos:].lstrip(_WS)[len(name) :].lstrip(_WS)
    if not rest.startswith("="):
        return f"expected '=' after label name {_quote(name)}"
    rest = rest[1:].lstrip(_WS)
    if not rest.startswith('"'):
        return f"label value of {_quote(name)} must be in double quotes"
    return f"label value of {_quote(name)} is not closed with '\"'"


def _parse_sample_line(line: str, *, om: bool, max_value: int | None) -> _Line:
    start = 0
    n = len(line)
    if not om:  # the text format tolerates indentation
        while start < n and line[start] in _WS:
            start += 1
    m = _NAME_RE.match(line, start)
    if m is None:
        if start < n and line[start] == "{":
            raise _LineError("missing metric name before '{' (quoted UTF-8 names are not supported)")
        word = _WS_SPLIT(line[start:], 1)[0] or line[start:]
        raise _LineError(f"invalid metric name {_quote(word)}")
    name = m.group()
    pos = m.end()
    if pos < n and line[pos] not in " \t{":
        word = _WS_SPLIT(line[start:], 1)[0]
        raise _LineError(f"invalid metric name {_quote(word)}")
    series_end = pos
    if not om:
        while pos < n and line[pos] in _WS:
            pos += 1
    labels: dict[str, str] = {}
    if pos < n and line[pos] == "{":
        labels, pos = _parse_labels(line, pos + 1, om=om, max_value=max_value)
        series_end = pos
    else:
        pos = series_end
    rest = line[pos:]
    exemplar = False
    hash_at = rest.find("#")
    if hash_at >= 0:
        # An exemplar: " # {labels} value [timestamp]" after the value; ignored.
        if hash_at == 0 or rest[hash_at - 1] not in _WS:
            raise _LineError("unexpected '#' (an exemplar must follow the value after ' # ')")
        ex = rest[hash_at + 1 :].strip(_WS)
        if not ex.startswith("{") or "}" not in ex:
            raise _LineError("invalid exemplar after ' # ' (expected '{labels} value')")
        exemplar = True
        rest = rest[:hash_at]
    tokens = _WS_SPLIT(rest.strip(_WS)) if rest.strip(_WS) else []
    if not tokens:
        raise _LineError(f"missing value after {_quote(line[start:series_end], 60)}")
    if len(tokens) > 2:
        raise _LineError(f"unexpected text {_quote(tokens[2])} after the timestamp")
    if om and rest[:1] != " ":
        raise _LineError("expected a single space before the value")
    value = _parse_float(tokens[0], "sample value")
    timestamp = _parse_timestamp(tokens[1], om=om) if len(tokens) == 2 else None
    return _Line(name, labels, series_end, value, timestamp, tokens, exemplar)


def _check_metadata(line: str, *, om: bool) -> tuple[str, str] | None:
    """Validate a line starting with '#'; plain comments pass in the text format.

    A ``# TYPE`` line returns ``(family, type)``: the samples that follow are of that type, which
    decides whether they may carry an exemplar.
    """
    if line[1:2] not in (" ", "\t"):
        if om:
            raise _LineError("expected '# HELP', '# TYPE', '# UNIT' or '# EOF'")
        return None  # e.g. '#HELP ...' or '#' alone: a comment for the text format
    words = _WS_SPLIT(line[1:].lstrip(_WS), 2)
    keyword = words[0]
    keywords = ("HELP", "TYPE", "UNIT") if om else ("HELP", "TYPE")
    if keyword not in keywords:
        if om:
            raise _LineError("expected '# HELP', '# TYPE', '# UNIT' or '# EOF' (no comments in OpenMetrics)")
        return None
    if len(words) < 2 or not words[1]:
        raise _LineError(f"missing metric name after '# {keyword}'")
    if not _FULL_NAME_RE.match(words[1]):
        raise _LineError(f"invalid metric name {_quote(words[1])} in '# {keyword}'")
    if keyword == "TYPE":
        types = _OM_TYPES if om else _TEXT_TYPES
        kind = words[2].strip(_WS) if len(words) > 2 else ""
        if kind not in types:
            raise _LineError(f"unknown metric type {_quote(kind)} (expected one of {', '.join(sorted(types))})")
        return words[1], kind
    return None


_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created", "_gcount", "_gsum", "_info")


def _exemplar_allowed(name: str, family: tuple[str, str] | None, *, om: bool) -> bool:
    """Whether sample ``name`` may carry an exemplar, given the last ``# TYPE`` seen.

    OpenMetrics: only a counter's ``_total`` and a (gauge)histogram's ``_bucket`` (a sample of no
    declared family is of unknown type, which may not). The text format has no exemplars; ptmon
    tolerates them, as prometheus_client does, except where the declared type cannot have one.
    """
    base, kind = family if family is not None else ("", "")
    if not (name == base or (name.startswith(base) and name[len(base):] in _SUFFIXES)):
        kind = "unknown" if om else "untyped"
    if kind == "counter":
        return name.endswith("_total") or (not om and name == base)
    if kind in ("histogram", "gaugehistogram"):
        return name.endswith("_bucket")
    return kind == "untyped"


def _detect_openmetrics(text: str) -> bool:
    # The last line; cheap at any size (searching 1 MB for '# EOF' would not be).
    tail = text[-64:].rstrip("\r\n")
    return tail.endswith("\n# EOF") or tail == "# EOF"


class ExpositionParser:
    """A parser for one target, remembering its series from scrape to scrape.

    Keep one per target and call :meth:`parse` with each scrape's body. The
    first scrape parses every line carefully; from the second on, a line whose
    series text (everything before the value) was seen before costs a dict
    lookup and a ``float()``.

    Identity guarantee: while a series' text stays byte-identical, every
    scrape returns the *same* :class:`Labels` object for it (and the same name
    string), so a consumer may cache per-series work keyed by ``id(labels)``
    and confirm a hit with ``is``. It is a fast-path promise, not a semantic
    one: a series that leaves the page is forgotten, and one that comes back
    gets a new object with equal contents. Compare by value whenever identity
    differs.

    ``max_label_value_length`` (bytes, UTF-8), ``max_series_bytes`` (name and
    label set as written) and ``max_line_length`` (characters) bound what one
    line may hold; ``max_lines`` what one scrape may hold (checked before any
    line is parsed, so a cardinality explosion costs neither the time to parse
    it nor the caches to remember it) and ``max_page_series_bytes`` the series
    text of one scrape (what the cache keeps of it); ``None`` means no limit.
    The cache holds the series of the last page parsed and nothing else.

    ``keep``, when given, is asked once per new series for its sample name
    (``Sample.name``: ``x_bucket``, not ``x``): the samples of a name it
    rejects are not returned, so a consumer that reads few of a page's
    series pays for few. A rejected line is still checked the first time its
    series is seen exactly as any line is (grammar, value, every limit; an
    invalid one still fails the scrape), and the page is always checked for
    the line count and line length limits and its series text for the page
    budget (a rejected series is cached like any other, to be skipped at the
    cost of a dict lookup). While its series text is unchanged its value is
    not read at all, so a rejected series' value turning invalid on a later
    scrape is not an error, where a cold parse of that page would refuse it.
    ``None`` (the default) returns every sample.
    """

    __slots__ = ("_max_value", "_max_series", "_series_chars", "_max_page", "_max_line", "_max_lines", "_caches",
                 "_held", "_meta", "_values", "_family", "_keep", "_skipped", "_short", "_rejected")

    # At most this many value texts are remembered (cleared when full, at the next scrape), none longer
    # than _VALUE_TEXT (the longest float repr is 24 characters). 4,096: a page of moving counters never
    # repeats a value, so the cache sits near its cap, ~110 B an entry in every target's parser (50,000 held
    # ~5 MB a target: ~170 MB of a 64-target watch); a 1,000-sample worker page parses as fast at 4,096.
    _VALUES_CAP = 4_096
    _VALUE_TEXT = 32
    # A cold page is read a column at a time from this many sample lines beyond its metadata (see _by_columns).
    _COLUMNS_FROM = 200

    def __init__(self, *, max_label_value_length: int | None = MAX_LABEL_VALUE_BYTES,
                 max_series_bytes: int | None = MAX_SERIES_BYTES,
                 max_page_series_bytes: int | None = MAX_PAGE_SERIES_BYTES,
                 max_line_length: int | None = None, max_lines: int | None = None,
                 keep: Callable[[str], bool] | None = None) -> None:
        self._max_value = max_label_value_length
        self._max_series = max_series_bytes
        self._series_chars = sys.maxsize if max_series_bytes is None else max_series_bytes // 4
        # A series this short is within the series and label value limits (4 bytes a character at most).
        self._short = min(self._series_chars,
                          sys.maxsize if max_label_value_length is None else max_label_value_length // 4)
        self._max_page = max_page_series_bytes
        self._max_line = max_line_length
        self._max_lines = max_lines
        # series text -> [name, labels, last value text, last Sample]; one cache per format, as validity
        # differs; _held: the bytes of series text each holds (its keys).
        self._caches: tuple[dict[str, list[Any]], dict[str, list[Any]]] = ({}, {})
        self._held = [0, 0]
        # How many series of each cache ``keep`` rejected, while that cache is unchanged; None: count again.
        # Only the careful and cold paths change a cache, so a steady scrape reuses the last count.
        self._rejected: list[int | None] = [None, None]
        # metadata lines already validated, per format -> the (family, type) a TYPE line declares.
        self._meta: tuple[dict[str, tuple[str, str] | None], dict[str, tuple[str, str] | None]] = ({}, {})
        self._values: dict[str, float] = {}
        self._family: tuple[str, str] | None = None  # the last '# TYPE' of the page being parsed
        self._keep = keep
        self._skipped = 0  # lines of series ``keep`` rejected, on the page being parsed

    @property
    def skipped(self) -> int:
        """The sample lines of the last page ``keep`` rejected (not returned): its samples are these and
        the ones returned, so a scrape's sample and series counts stay whole."""
        return self._skipped

    def skipped_series(self, *, openmetrics: bool) -> int:
        """How many distinct series ``keep`` rejected on the last page of that format (a series written
        twice is one), from the cache, which holds that page's series."""
        if not self._skipped:
            return 0
        om = bool(openmetrics)
        count = self._rejected[om]
        if count is None:
            count = self._rejected[om] = list(self._caches[om].values()).count(_SKIP)
        return count

    def parse(self, text: str, *, openmetrics: bool | None = None) -> list[Sample]:
        """Parse one scrape's body; raises :class:`ParseError` on the first invalid line."""
        om = _detect_openmetrics(text) if openmetrics is None else bool(openmetrics)
        if not om and "\r" in text:
            text = _without_crlf(text)
        found = self._whole_page(text, om)
        # not splitlines(): '\x1c', '\u2028', ... are legal inside label values
        lines = text.split("\n") if found is None else None
        if lines is not None:
            self._check_size(lines)
        out: list[Sample] = []
        self._family = None
        self._skipped = 0
        try:
            if found is None:
                assert lines is not None
                eof = self._parse_lines(lines, out, om)
            elif self._by_columns(text, found) and (common := self._parse_common(text, found, out, om)) is not None:
                eof = common
            else:
                eof = self._parse_page(text, found, out, om)
        finally:
            self._forget_the_rest(text, lines, out, om)
        if om and not eof:
            lines = text.split("\n")
            last = len(lines) - 1 if len(lines) > 1 and not lines[-1] else len(lines)
            raise ParseError("missing '# EOF' at the end (the OpenMetrics body is incomplete)",
                             lineno=last, line=lines[last - 1][:1000])
        return out

    def _whole_page(self, text: str, om: bool) -> list[tuple[str, ...]] | None:
        """A cold parse's page as ``_PAGE_RE`` reads it, one tuple a line; None: parse line by line.

        Cold means nothing cached for this format (a first scrape, ``parse()``); a warm parser's
        line loop is faster. The line count is checked before the page is read, as ``_check_size``
        does (which then raises with its words).
        """
        if self._caches[om] or self._max_line is not None:
            return None
        count = text.count("\n") + 1
        if self._max_lines is not None and count - (not text or text[-1] == "\n") > self._max_lines:
            self._check_size(text.split("\n"))
        found: list[tuple[str, ...]] = _PAGE_RE[om].findall(text)
        return found if len(found) == count else None

    def _by_columns(self, text: str, found: list[tuple[str, ...]]) -> bool:
        """Whether a cold page is cheaper a column at a time (``_parse_common``) than match by match.

        Columns cost some forty C calls whatever the page (~10 us: llama.cpp's 8-line page took 15 us
        that way, 10 us match by match) and a label split per pair, so they pay only on many samples
        (a 64-worker page: 0.84x the time of the match loop) and lose on metadata-heavy pages
        (Prometheus's own: 1.08x, Alertmanager's 1.08x), where HELP/TYPE lines cost the loop one
        dict store each. Lines minus twice the '#' lines is a cheap count of those samples.
        """
        return len(found) - 2 * text.count("\n#") >= self._COLUMNS_FROM

    def _check_size(self, lines: list[str]) -> None:
        if self._max_lines is not None:
            count = len(lines) - (lines[-1] == "")  # the empty string after a final newline is no line
            if count > self._max_lines:
                raise ParseError(f"{count:,} lines exceed the limit of {self._max_lines:,} per scrape",
                                 lineno=self._max_lines + 1, line=lines[self._max_lines][:1000])
        if self._max_line is not None:
            longest = max(map(len, lines))
            if longest > self._max_line:
                self._raise_long_line(lines)

    def _parse_common(self, text: str, found: list[tuple[str, ...]], out: list[Sample], om: bool) -> bool | None:
        """The cold path of a page of common lines only, a column at a time (no Python per line).

        Taken when every line is a sample ``_PAGE_RE`` matched, a HELP/TYPE line, a comment or a
        blank (OpenMetrics: and the final '# EOF'), and every sample is within every limit, of a new
        series, with a plain number; anything else returns None before any state changed, and
        ``_parse_page`` reads the page line by line. Returns whether '# EOF' was read.
        """
        series, names, blocks, vals, hlines, tlines, tnames, kinds, others = zip(*found, strict=True)
        eof = self._common_end(found, (series, hlines, tlines, others), om)
        if eof is None or "__name__" in text:
            return None
        vals = tuple(compress(vals, series))
        joined = "".join(vals)
        if "_" in joined or not joined.isascii() or not joined.isprintable():
            return None
        try:
            values = list(map(float, vals))
        except ValueError:
            return None
        blocks = tuple(compress(blocks, series))
        series, names = tuple(compress(series, series)), tuple(compress(names, series))
        if series and max(map(len, series)) > self._short:
            return None  # a series near a byte limit: _careful measures it
        labels = _labels_of_blocks(blocks)
        if labels is None:
            return None  # a duplicate label name
        held = self._held[om] + (sum(map(len, series)) if text.isascii() else sum(map(_utf8_len, series)))
        if self._max_page is not None and held > self._max_page:
            return None
        samples = list(map(tuple.__new__, repeat(Sample), zip(names, labels, values, repeat(None), strict=False)))
        entries = dict(zip(series, map(list, zip(names, labels, vals, samples, strict=True)), strict=True))
        if len(entries) != len(series):
            return None  # a series twice on the page
        if self._keep is not None:
            samples = self._kept(names, samples, entries)
        cache, meta = self._caches[om], self._meta[om]
        cache.update(entries)
        self._rejected[om] = None
        self._held[om] = held
        meta.update(zip(compress(hlines, hlines), repeat(None), strict=False))
        meta.update(zip(compress(tlines, tlines), zip(compress(tnames, tlines), compress(kinds, tlines), strict=True),
                        strict=True))
        out.extend(samples)
        return eof

    @staticmethod
    def _common_end(found: list[tuple[str, ...]], columns: tuple[tuple[str, ...], ...], om: bool) -> bool | None:
        """Whether the page's other lines are blanks (text format) or its final '# EOF' (True), else None.

        ``columns``: the sample, HELP, TYPE and other-line columns of ``found``.
        """
        others = columns[-1]
        if not om:
            return None if any(others) else False
        if [text for text in others if text] != ["# EOF"]:
            return None  # in OpenMetrics, no line but '# EOF' is left to the careful path...
        # ... and no blank line but the empty string after its final newline
        blanks = sum(map(tuple.count, columns, repeat(""))) - 3 * len(found)  # 3 of 4 empty on any other line
        if found[-1][8] == "# EOF":
            return True if blanks == 0 else None
        return True if blanks == 1 and found[-2][8] == "# EOF" and not any(found[-1]) else None

    def _kept(self, names: tuple[str, ...], samples: list[Sample], entries: dict[str, list[Any]]) -> list[Sample]:
        """The samples ``keep`` accepts; the entries of the others become _SKIP."""
        assert self._keep is not None
        verdict = {name: bool(self._keep(name)) for name in set(names)}
        accepted = list(map(verdict.__getitem__, names))
        for key, ok in zip(list(entries), accepted, strict=True):
            if not ok:
                entries[key] = _SKIP
        self._skipped += accepted.count(False)
        return list(compress(samples, accepted))

    def _parse_page(self, text: str, found: list[tuple[str, ...]], out: list[Sample], om: bool) -> bool:
        """The cold path: common lines built from the page's matches, any other through ``_careful``.

        A sample line is built here only when the careful path would accept it unchanged (a new
        series within every limit, no duplicate or ``__name__`` label, a plain number); anything
        else, errors included, is handed to ``_careful`` whole, which says why. True at '# EOF'.
        """
        cache, meta = self._caches[om], self._meta[om]
        self._rejected[om] = None  # the page's series go into the cache here
        get = cache.get
        append = out.append
        pairs_of = _PAIR_RE.findall
        blocks: dict[str, list[tuple[str, str]]] = {}  # label block -> its pairs: le="0.5" and the like repeat
        bget = blocks.get
        values = self._values
        if len(values) >= self._VALUES_CAP:
            values.clear()
        vget = values.get
        new = tuple.__new__
        short = self._short
        held = self._held[om]
        # Within the page budget whatever it holds: then no series is counted here (cheaper), the total after.
        unbounded = self._max_page is None or held + len(text) * (1 if text.isascii() else 4) <= self._max_page
        keep = self._keep
        kept: dict[str, bool] = {}
        family = None
        skipped = 0
        lines: list[str] | None = None
        for lineno, (series, name, block, val, hline, tline, tname, kind, other) in enumerate(found, 1):
            if series:
                if unbounded and len(series) <= short and get(series) is None:
                    pairs = bget(block)
                    if pairs is None:
                        pairs = blocks[block] = pairs_of(block) if block else []
                    labels = Labels(pairs)
                    value = vget(val)
                    if value is None and not ("_" in val or not val.isascii() or not val.isprintable()):
                        try:
                            value = float(val)
                        except ValueError:
                            pass
                        else:
                            if len(val) <= 32:
                                values[val] = value
                    if value is not None and len(labels) == len(pairs) and "__name__" not in labels:
                        if keep is None or (kept[name] if name in kept else kept.setdefault(name, bool(keep(name)))):
                            cache[series] = [name, labels, val, sample := new(Sample, (name, labels, value, None))]
                            append(sample)
                        else:
                            cache[series] = _SKIP
                            skipped += 1
                        continue
                line = f"{series} {val}"
            elif hline:
                meta[hline] = None
                continue
            elif tline:
                meta[tline] = family = (tname, kind)
                continue
            elif not (other or om):
                continue  # a blank line, which the text format allows
            else:
                line = other
            if lines is None:
                lines = text.split("\n")
            self._sync(om, held, family, skipped, unbounded)
            skipped = 0
            if self._careful_line(line, out, om, lines, lineno):
                return True
            held, family = self._held[om], self._family
        self._sync(om, held, family, skipped, unbounded)
        return False

    def _sync(self, om: bool, held: int, family: tuple[str, str] | None, skipped: int, unbounded: bool) -> None:
        """Hand ``_parse_page``'s running state to the careful path (or keep it, at the end)."""
        self._held[om] = sum(map(_utf8_len, self._caches[om])) if unbounded else held
        self._family = family
        self._skipped += skipped

    def _careful_line(self, line: str, out: list[Sample], om: bool, lines: list[str], lineno: int) -> bool:
        """``_careful`` with its error as a ParseError naming the line; True at '# EOF'."""
        try:
            if self._careful(line, out, om, lines, lineno):
                self._after_eof(lines, lineno)
                return True
        except _LineError as e:
            where = f" in {_shorten(line)}" if line.strip(_WS) else ""
            raise ParseError(f"{e}{where}", lineno=lineno, line=line[:1000]) from None
        return False

    def _parse_lines(self, lines: list[str], out: list[Sample], om: bool) -> bool:
        """The fast path, falling back to ``_careful`` line by line; True when '# EOF' was read."""
        cache = self._caches[om]
        append = out.append
        get = cache.get
        # value text -> float: counts repeat across series and scrapes, and float(str) is slow.
        values = self._values
        if len(values) >= self._VALUES_CAP:
            values.clear()
        vget = values.get
        values_cap = self._VALUES_CAP
        value_text = self._VALUE_TEXT
        new = tuple.__new__
        sample_type = Sample
        skip = _SKIP
        skipped = 0
        mget = self._meta[om].get
        missing = _MISSING
        it = iter(lines)
        line = ""
        while True:
            try:
                for line in it:
                    head, _, val = line.rpartition(" ")
                    hit = get(head)
                    if hit is None:
                        family = mget(line, missing)  # a metadata line validated before?
                        if family is missing:
                            if line or om:
                                break
                            continue  # a blank line, which the text format allows
                        if family is not None:
                            self._family = family
                        continue
                    if hit is skip:  # a series ``keep`` rejected: its value is not read (most lines, with keep)
                        skipped += 1
                        continue
                    if val == hit[2]:  # same value as last scrape: same (immutable) Sample
                        append(hit[3])
                        continue
                    value = vget(val)
                    if value is None:  # a number not seen lately
                        # float() takes '1_0', '١٢' and '1\x0b'; Prometheus does not (the careful path says why).
                        if "_" in val or not val.isascii() or not val.isprintable():
                            break
                        value = float(val)
                        if len(values) < values_cap and len(val) <= value_text:
                            values[val] = value
                    hit[3] = sample = new(sample_type, (hit[0], hit[1], value, None))
                    hit[2] = val
                    append(sample)
                else:
                    self._skipped += skipped
                    return False  # every line read
            except ValueError:
                pass  # float() refused: let the careful path say why
            self._skipped += skipped
            skipped = 0
            if self._careful_line(line, out, om, lines, len(lines) - length_hint(it)):
                return True

    def _careful(self, line: str, out: list[Sample], om: bool, lines: list[str], lineno: int) -> bool:
        """Parse one line the slow way, appending its sample; True at '# EOF'."""
        if not line or (not om and not line.strip(_WS)):
            if om and lineno != len(lines):  # the empty string after the final newline is no line
                raise _LineError("blank line (not allowed in OpenMetrics)")
            return False
        first = line[0] if om else line.lstrip(_WS)[0]
        if first == "#":
            if om and line == "# EOF":
                return True
            self._metadata(line, om)
            return False
        cache = self._caches[om]
        known = cache.get(line.rpartition(" ")[0].rpartition(" ")[0])  # 'series value timestamp'?
        if known is not None and (sample := self._timestamped(known, line, om)) is not None:
            self._emit(out, sample, known)
            return False
        simple = _SIMPLE_LINE_RE.match(line)
        if simple is not None and not (om and (simple.group(2) or "").endswith(",")):
            name, block, vtok = simple.groups()
            value = _parse_float(vtok, "sample value")
            series = line[: simple.start(3) - 1]
            entry = cache.get(series)
            if entry is None:
                if len(series) > self._series_chars:
                    self._check_series(series)
                labels = Labels(_labels_of(block, self._max_value) if block else ())
                sample = Sample(name, labels, value, None)
                entry = self._entry(name, labels, vtok, sample)
                self._remember(series, entry, om, lines, lineno)
            else:
                sample = Sample(entry[0], entry[1], value, None)
            self._emit(out, sample, entry)
            return False
        p = _parse_sample_line(line, om=om, max_value=self._max_value)
        if p.series_end > self._series_chars:
            self._check_series(line[: p.series_end])
        if p.exemplar and not _exemplar_allowed(p.name, self._family, om=om):
            raise _LineError(f"exemplar on {_quote(p.name)}, a sample that cannot have one (only a counter's "
                             "_total and a histogram's _bucket can)")
        key = self._cache_key(line, p)
        entry = cache.get(key) if key is not None else None
        if entry is not None:
            name, labels = entry[0], entry[1]
        else:
            name, labels = p.name, Labels(p.labels)
        sample = Sample(name, labels, p.value, p.timestamp)
        if entry is None:
            entry = self._entry(name, labels, p.tokens[0] if p.timestamp is None else None, sample)
            if key is not None:
                self._remember(key, entry, om, lines, lineno)
        self._emit(out, sample, entry)
        return False

    def _entry(self, name: str, labels: Labels, text: str | None, sample: Sample) -> list[Any]:
        """A new series' cache entry: [name, labels, last value text, last Sample], or _SKIP."""
        if self._keep is not None and not self._keep(name):
            return _SKIP
        return [name, labels, text, sample]  # an unchanged line reuses its (immutable) Sample

    def _emit(self, out: list[Sample], sample: Sample, entry: list[Any]) -> None:
        if entry is _SKIP:
            self._skipped += 1
        else:
            out.append(sample)

    def _metadata(self, line: str, om: bool) -> None:
        meta = self._meta[om]
        if line in meta:
            family = meta[line]
        else:
            family = meta[line] = _check_metadata(line if om else line.lstrip(_WS), om=om)
        if family is not None:
            self._family = family

    @staticmethod
    def _timestamped(known: list[Any], line: str, om: bool) -> Sample | None:
        """The line as the ``known`` series with a value and a timestamp, or None.

        Only when the grammar reads the line so: both tokens free of whitespace, the first not a
        label set (``x {a="b"} 2`` after a cached ``x`` is series ``x{a="b"}``, not ``x`` at
        ``{a="b"}``) and both numbers; anything else is left to the full parse, which says why.
        """
        head, _, last = line.rpartition(" ")
        vtok = head.rpartition(" ")[2]
        if (not vtok or not last or vtok[0] == "{" or "#" in line
                or not vtok.isprintable() or not last.isprintable()):
            return None
        try:
            return Sample(known[0], known[1], _parse_float(vtok, "sample value"), _parse_timestamp(last, om=om))
        except _LineError:
            return None

    def _check_series(self, text: str) -> None:
        """Refuse a series whose text (name and label set as written) is over the byte budget.

        Called only past ``_series_chars`` characters (a quarter of the budget: 4 bytes a character
        at most), so a normal series costs one comparison.
        """
        limit = self._max_series
        size = _utf8_len(text)
        if limit is not None and size > limit:
            raise _LineError(f"series of {size:,} bytes (name and labels) exceeds the limit of {limit:,}")

    def _remember(self, key: str, entry: list[Any], om: bool, lines: list[str], lineno: int) -> None:
        """Cache a new series, within the page's byte budget (series of earlier pages go first)."""
        cache = self._caches[om]
        size = len(key) if key.isascii() else _utf8_len(key)
        limit = self._max_page
        if limit is not None and self._held[om] + size > limit:
            self._keep_only(lines[:lineno], om)
            if self._held[om] + size > limit:
                raise _LineError(f"the series of this scrape exceed {limit:,} bytes of names and labels "
                                 "(the limit per target)")
        cache[key] = entry
        self._held[om] += size
        self._rejected[om] = None

    def _forget_the_rest(self, text: str, lines: list[str] | None, out: list[Sample], om: bool) -> None:
        """Bound the caches to this page: more entries than sample lines means some are of series gone.

        In steady state both tests are false and nothing is scanned; after series churn (or a scrape
        cut short by an error) one more pass over the lines keeps exactly what this page holds.
        ``lines`` is the page split, or None when it was read whole (split here only if needed).
        """
        self._family = None
        samples = len(out) + self._skipped
        count = text.count("\n") + 1 if lines is None else len(lines)
        meta = self._meta[om]
        if len(self._caches[om]) > samples or len(meta) > count - samples:
            lines = text.split("\n") if lines is None else lines
            if len(self._caches[om]) > samples:
                self._keep_only(lines, om)
            if len(meta) > count - samples:
                kept = {line: meta[line] for line in lines if line in meta}
                meta.clear()
                meta.update(kept)

    def _keep_only(self, lines: list[str], om: bool) -> None:
        """Drop every cached series that is not on one of ``lines``."""
        cache = self._caches[om]
        get = cache.get
        kept: dict[str, list[Any]] = {}
        for line in lines:
            head = line.rpartition(" ")[0]
            entry = get(head)
            if entry is None:  # a timestamped line is cached by the text before its last two tokens
                head = head.rpartition(" ")[0]
                entry = get(head)
                if entry is None:
                    continue
            kept[head] = entry
        cache.clear()
        cache.update(kept)
        self._held[om] = sum(map(_utf8_len, cache))
        self._rejected[om] = None

    @staticmethod
    def _cache_key(line: str, p: _Line) -> str | None:
        """The text the fast path will look up for this series, if it is safe to cache.

        Safe when the last space-separated token(s) of the line are exactly the
        value (and timestamp) tokens: then any line 'key value' (or 'key value
        timestamp') with new numbers parses to the same series.
        """
        if p.exemplar:
            return None
        head, _, last = line.rpartition(" ")
        if p.timestamp is None:
            return head if last == p.tokens[0] and len(head) >= p.series_end else None
        series, _, vtok = head.rpartition(" ")
        if last == p.tokens[1] and vtok == p.tokens[0] and len(series) >= p.series_end:
            return series
        return None

    @staticmethod
    def _after_eof(lines: list[str], lineno: int) -> None:
        rest = lines[lineno:]
        if rest == [] or rest == [""]:
            return
        bad = next(i for i, text in enumerate(rest) if text or i < len(rest) - 1)
        raise ParseError("text after '# EOF'", lineno=lineno + 1 + bad, line=rest[bad][:1000])

    def _raise_long_line(self, lines: list[str]) -> NoReturn:
        assert self._max_line is not None
        for i, text in enumerate(lines, 1):
            if len(text) > self._max_line:
                raise ParseError(f"line of {len(text)} characters exceeds the limit of {self._max_line}",
                                 lineno=i, line=text[:1000])
        raise AssertionError("unreachable")


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _without_crlf(text: str) -> str:
    """The text format's CRLF line ends as LF (a '\\r' anywhere else stays, and is refused as a value)."""
    text = text.replace("\r\n", "\n")
    return text[:-1] if text.endswith("\r") else text
