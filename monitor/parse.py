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
from collections.abc import Mapping
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


def parse(text: str, *, openmetrics: bool | None = None) -> list[Sample]:
    """Parse one exposition; ``openmetrics=None`` detects it by a final ``# EOF``.

    A one-off, cold parse: a scraper should keep one :class:`ExpositionParser`
    per target instead, which is many times faster from the second scrape on.
    """
    return ExpositionParser().parse(text, openmetrics=openmetrics)


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
    """

    __slots__ = ("_max_value", "_max_series", "_series_chars", "_max_page", "_max_line", "_max_lines", "_caches",
                 "_held", "_meta", "_values", "_family")

    # At most this many value texts are remembered (cleared when full, at the next scrape), none longer
    # than _VALUE_TEXT (the longest float repr is 24 characters).
    _VALUES_CAP = 50_000
    _VALUE_TEXT = 32

    def __init__(self, *, max_label_value_length: int | None = MAX_LABEL_VALUE_BYTES,
                 max_series_bytes: int | None = MAX_SERIES_BYTES,
                 max_page_series_bytes: int | None = MAX_PAGE_SERIES_BYTES,
                 max_line_length: int | None = None, max_lines: int | None = None) -> None:
        self._max_value = max_label_value_length
        self._max_series = max_series_bytes
        self._series_chars = sys.maxsize if max_series_bytes is None else max_series_bytes // 4
        self._max_page = max_page_series_bytes
        self._max_line = max_line_length
        self._max_lines = max_lines
        # series text -> [name, labels, last value text, last Sample]; one cache per format, as validity
        # differs; _held: the bytes of series text each holds (its keys).
        self._caches: tuple[dict[str, list[Any]], dict[str, list[Any]]] = ({}, {})
        self._held = [0, 0]
        # metadata lines already validated, per format -> the (family, type) a TYPE line declares.
        self._meta: tuple[dict[str, tuple[str, str] | None], dict[str, tuple[str, str] | None]] = ({}, {})
        self._values: dict[str, float] = {}
        self._family: tuple[str, str] | None = None  # the last '# TYPE' of the page being parsed

    def parse(self, text: str, *, openmetrics: bool | None = None) -> list[Sample]:
        """Parse one scrape's body; raises :class:`ParseError` on the first invalid line."""
        om = _detect_openmetrics(text) if openmetrics is None else bool(openmetrics)
        if not om and "\r" in text:
            text = _without_crlf(text)
        lines = text.split("\n")  # not splitlines(): '\x1c', '\u2028', ... are legal inside label values
        self._check_size(lines)
        out: list[Sample] = []
        self._family = None
        try:
            eof = self._parse_lines(lines, out, om)
        finally:
            self._forget_the_rest(lines, out, om)
        if om and not eof:
            last = len(lines) - 1 if len(lines) > 1 and not lines[-1] else len(lines)
            raise ParseError("missing '# EOF' at the end (the OpenMetrics body is incomplete)",
                             lineno=last, line=lines[last - 1][:1000])
        return out

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
        it = iter(lines)
        line = ""
        while True:
            try:
                for line in it:
                    head, _, val = line.rpartition(" ")
                    hit = get(head)
                    if hit is None:
                        break
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
                    return False  # every line read
            except ValueError:
                pass  # float() refused: let the careful path say why
            lineno = len(lines) - length_hint(it)
            try:
                if self._careful(line, out, om, lines, lineno):
                    self._after_eof(lines, lineno)
                    return True
            except _LineError as e:
                where = f" in {_shorten(line)}" if line.strip(_WS) else ""
                raise ParseError(f"{e}{where}", lineno=lineno, line=line[:1000]) from None

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
            out.append(sample)
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
                sample = Sample(name, Labels(_labels_of(block, self._max_value) if block else ()), value, None)
                self._remember(series, [name, sample.labels, vtok, sample], om, lines, lineno)
            else:
                sample = Sample(entry[0], entry[1], value, None)
            out.append(sample)
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
        if key is not None and entry is None:
            # [name, labels, last value text, last Sample]: an unchanged line reuses its Sample.
            self._remember(key, [name, labels, p.tokens[0] if p.timestamp is None else None, sample], om,
                           lines, lineno)
        out.append(sample)
        return False

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

    def _forget_the_rest(self, lines: list[str], out: list[Sample], om: bool) -> None:
        """Bound the caches to this page: more entries than samples means some are of series gone.

        In steady state both tests are false and nothing is scanned; after series churn (or a scrape
        cut short by an error) one more pass over the lines keeps exactly what this page holds.
        """
        self._family = None
        if len(self._caches[om]) > len(out):
            self._keep_only(lines, om)
        meta = self._meta[om]
        if len(meta) > len(lines) - len(out):
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
