"""A widget drawn from cached lines of Rich Text (Textual's Line API).

The cards, charts and header change once a second. Rendered as ordinary
widgets, each change goes through Textual's Content layer (markup-free, but
still wrapped and re-formatted); drawn here, a change renders each line once
with Rich into a Strip, cropped to the box, and the compositor only copies it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Self, TypeVar

from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from ptmon.monitor.text import safe

__all__ = ["DrawFailed", "DrawGuard", "LineWidget", "error_strips", "row_regions", "same_text"]

T = TypeVar("T")


class DrawFailed(Message):
    """A widget could not draw itself (``error``), or can again (``error`` None).

    Bubbles to the app, which reports it like a feed error; the widget shows the error in its
    own box meanwhile, so one widget's bad number never takes the other widgets (or the app) down.
    """

    def __init__(self, widget: Widget, error: str | None) -> None:
        super().__init__()
        self.widget = widget
        self.error = error


class DrawGuard:
    """Runs a widget's drawing; an exception becomes a fallback drawing and one DrawFailed."""

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        self.error: str | None = None

    def run(self, draw: Callable[[], T], fallback: Callable[[str], T]) -> T:
        try:
            result = draw()
        except Exception as exc:  # any bug or number the drawing chokes on: say so, keep the app up
            error = f"{type(exc).__name__}: {exc}"
            if error != self.error:
                self.error = error
                self._widget.log.error(f"{self._widget!r} cannot draw: {error}")
                self._report(error)
            return fallback(error)
        if self.error is not None:
            self.error = None
            self._report(None)
        return result

    def _report(self, error: str | None) -> None:
        # Drawing runs in the screen's task: a message made there has the screen as its sender and
        # would stop bubbling at the screen. Made in the widget's own task it reaches the app.
        widget = self._widget
        widget.call_later(lambda: widget.post_message(DrawFailed(widget, error)))


def error_strips(widget: Widget, error: str, width: int, height: int, base: Style) -> list[Strip]:
    """What a widget that cannot draw shows instead: the error on its first line, literally."""
    text = Text(safe(f"⚠ cannot draw: {error}"), style="bold red", no_wrap=True, end="")
    first = Strip(list(text.render(widget.app.console, end=""))).crop_extend(0, width, None).apply_style(base)
    return [first] + [Strip.blank(width, base)] * max(0, height - 1)


def row_regions(rows: Iterable[int], width: int, *, top: int = 0) -> list[Region]:
    """One region per run of consecutive rows (offset by ``top``): fewer, taller regions for the compositor."""
    regions: list[Region] = []
    start: int | None = None  # the run so far is rows start..end - 1 (no run yet: None)
    end = 0
    for y in sorted(set(rows)):
        if start is not None and y == end:
            end += 1
            continue
        if start is not None:
            regions.append(Region(0, start + top, width, end - start))
        start, end = y, y + 1
    if start is not None:
        regions.append(Region(0, start + top, width, end - start))
    return regions


def same_text(a: Text, b: Text) -> bool:
    """Would render the same: Text's own == looks at the characters and spans only, not the base style."""
    return (a == b and a.style == b.style and a.justify == b.justify and a.overflow == b.overflow
            and a.no_wrap == b.no_wrap and a.tab_size == b.tab_size)


class LineWidget(Widget):
    """Subclasses say what their lines are for a size; this caches them until ``redraw``."""

    _hold_refresh = False  # a class default: Widget.__init__ may refresh before ours has run

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cache: tuple[tuple[Size, Style], list[Strip]] | None = None
        self._texts: list[Text] = []  # what the cached Strips were rendered from, line by line
        self._guard = DrawGuard(self)

    @property
    def draw_error(self) -> str | None:
        """Why the last drawing failed (shown in the box instead), or None."""
        return self._guard.error

    def lines(self, width: int, height: int) -> list[Text]:
        raise NotImplementedError

    def redraw(self) -> None:
        """The content changed: repaint the lines that differ (all of them if the box changed)."""
        if self._cache is None:
            self.refresh()
            return
        key, old = self._cache
        size = key[0]
        if size != self.content_size:
            self.invalidate()
            return
        new = self._build(*key)
        self._cache = (key, new)
        changed = [y for y in range(max(len(old), len(new))) if y >= len(old) or y >= len(new) or old[y] != new[y]]
        if changed:
            # Only these lines go through the compositor again; a card whose one value ticked repaints one line.
            self.refresh(*row_regions(changed, size.width))

    def set_border_subtitle(self, subtitle: Text) -> None:
        """Change the text in the bottom border and repaint that row only.

        Assigning ``border_subtitle`` makes Textual repaint the whole widget; a chart
        whose subtitle carries a live number (rollouts/s) was repainted whole about
        every other second for a change in one row.
        """
        self._hold_refresh = True
        try:
            self.border_subtitle = subtitle
        finally:
            self._hold_refresh = False
        width, height = self.outer_size  # border included
        if not (self.is_mounted and width and height):
            self.refresh()
            return
        ox, oy = self.content_offset  # refresh() takes regions relative to the content
        self.refresh(Region(-ox, height - 1 - oy, width, 1))

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Self:
        if self._hold_refresh:  # set_border_subtitle repaints its one row itself
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def invalidate(self) -> None:
        """Everything changed (the box, the style): draw every line again."""
        self._cache = None
        self._texts = []
        self.refresh()

    def _build(self, size: Size, base: Style) -> list[Strip]:
        return self._guard.run(lambda: self._build_lines(size, base), lambda error: self._failed(error, size, base))

    def _failed(self, error: str, size: Size, base: Style) -> list[Strip]:
        self._texts = []  # no Strip of the error may be reused for a line that draws again
        return error_strips(self, error, size.width, size.height, base)

    def _build_lines(self, size: Size, base: Style) -> list[Strip]:
        # A line whose Text is the same as last time keeps its Strip: comparing a Text is far cheaper than
        # rendering it through Rich, and in a card or a chart most lines stay put from one second to the next.
        console = self.app.console
        old_texts = self._texts
        old = self._cache[1] if self._cache is not None and self._cache[0] == (size, base) else []
        texts = self.lines(size.width, size.height)[: size.height]
        strips = [
            old[y] if y < len(old) and y < len(old_texts) and same_text(text, old_texts[y])
            else Strip(list(text.render(console, end=""))).crop_extend(0, size.width, None).apply_style(base)
            for y, text in enumerate(texts)
        ]
        self._texts = texts
        return strips

    def render_lines(self, crop: Region) -> list[Strip]:
        # One style lookup per repaint, not one per line: it walks the CSS and showed in profiles.
        key = (self.content_size, self.rich_style)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._build(*key))
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        assert self._cache is not None  # render_lines filled it
        (size, base), strips = self._cache
        return strips[y] if y < len(strips) else Strip.blank(size.width, base)
