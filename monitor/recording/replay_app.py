"""``ptmon replay``'s screen: the live app on a ReplayFeed, plus the playback keys and a replay bar.

A subclass that adds bindings and one line, so the live app stays as it is:
``p`` pauses the playback (not just the screen), ``.``/``,`` step one
interval, ``n``/``N`` jump to the next/previous alert or event, ``>``/``<``
change the speed (1x-100x), ``g`` goes to a typed time, Home/End go to the
ends. The window keys and everything else are the live app's.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ptmon.monitor.app import PtmonApp
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.recording.replay import SPEEDS, ReplayFeed
from ptmon.monitor.recording.when import fmt_at, parse_at
from ptmon.monitor.text import safe

__all__ = ["ReplayApp", "ReplayBar"]

_FOLLOW_S = 0.5


class ReplayBar(Static):
    DEFAULT_CSS = """
    ReplayBar { dock: bottom; height: 1; background: $primary-darken-2; color: $text; padding: 0 1; }
    """


class _GoTo(ModalScreen[str | None]):
    DEFAULT_CSS = """
    _GoTo { align: center middle; }
    _GoTo > Input { width: 70; }
    """

    def compose(self) -> ComposeResult:
        yield Input(placeholder="go to: +5m, -30s, start, end, 23:50:05, 2026-12-01T23:50, unix seconds")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def key_escape(self) -> None:
        self.dismiss(None)


class ReplayApp(PtmonApp):
    """The screen on a recording."""

    BINDINGS = [
        Binding("p,space", "toggle_pause", "play/pause", tooltip="play or pause the recording"),
        Binding("full_stop", "step(1)", "step", key_display=".", tooltip="one interval forward (paused)"),
        Binding("comma", "step(-1)", "back", key_display=",", tooltip="one interval back (paused)"),
        Binding("n", "next_moment(1)", "next", tooltip="jump to the next alert or event"),
        Binding("N", "next_moment(-1)", "previous", show=False, tooltip="jump to the previous alert or event"),
        Binding("greater_than_sign", "speed(1)", "faster", key_display=">", tooltip="play faster (1x-100x)"),
        Binding("less_than_sign", "speed(-1)", "slower", key_display="<", show=False, tooltip="play slower"),
        Binding("g", "go_to", "go to", tooltip="go to a time (+5m, -30s, 23:50:05, ...)"),
        Binding("home", "seek_end(0)", "start", show=False, priority=True, tooltip="go to the start"),
        Binding("end", "seek_end(1)", "end", show=False, priority=True, tooltip="go to the end"),
    ]

    def __init__(self, feed: ReplayFeed, *, title: str = "ptmon replay") -> None:
        s = feed.settings
        super().__init__(feed, interval_s=s.interval_s, window_s=s.window_s, clock=feed.now, title=title,
                         thresholds=s.thresholds)
        self.replay = feed

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield ReplayBar(id="replay-bar")

    def show_dashboard(self, d: Dashboard) -> None:
        super().show_dashboard(d)
        self._show_bar()

    def _show_bar(self) -> None:
        head = self.replay.playhead
        state = f"▶ {head.speed:g}x" if head.playing else "⏸ paused"
        at = fmt_at(head.now(), start=head.start)
        total = fmt_at(head.end, start=head.start).split(" ", 1)[1].strip("()+")
        # query, not query_one: the follow timer can tick while the app shuts down and its widgets are gone
        text = f"REPLAY {state}  {at} of {total}  · p play/pause · ./, step · n next event · </> speed · g go to"
        for bar in self.query(ReplayBar):
            bar.update(text)

    async def on_mount(self) -> None:
        await super().on_mount()
        self.replay.playhead.play()
        # The recorded interval is the data's; while playing, the screen follows the playhead twice a second
        # (at 20x a 10 s interval would otherwise jump 200 s at a time).
        self.set_interval(_FOLLOW_S, self._follow)

    def _follow(self) -> None:
        if self.replay.playhead.playing:
            self._poll_soon()
        else:
            self._show_bar()

    def _moved(self) -> None:
        self._show_bar()
        self._poll_soon()

    def action_toggle_pause(self) -> None:
        head = self.replay.playhead
        if head.playing:
            head.pause()
        else:
            if head.now() >= head.end:
                head.seek(head.start)
            head.play()
        self._moved()

    def action_step(self, direction: int) -> None:
        self.replay.step(direction)
        self._moved()

    def action_next_moment(self, direction: int) -> None:
        if self.replay.seek_next(direction) is None:
            self.notify("no alert or event that way", title="replay")
        self._moved()

    def action_speed(self, direction: int) -> None:
        head = self.replay.playhead
        current = head.speed
        nxt = (next((v for v in SPEEDS if v > current), SPEEDS[-1]) if direction > 0
               else next((v for v in reversed(SPEEDS) if v < current), SPEEDS[0]))
        head.set_speed(nxt)
        self._moved()

    def action_seek_end(self, which: int) -> None:
        head = self.replay.playhead
        head.seek(head.end if which else head.start)
        self._moved()

    def action_go_to(self) -> None:
        def go(text: str | None) -> None:
            if not text:
                return
            head = self.replay.playhead
            try:
                head.seek(parse_at(text, start=head.start, end=head.end))
            except ValueError as exc:
                self.notify(safe(str(exc)), title="go to", severity="warning", markup=False)
            self._moved()

        self.push_screen(_GoTo(), go)
