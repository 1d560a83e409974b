"""What tests across the packages share: one hand-driven clock (``FakeClock``)."""

from tests.support.clock import FakeClock

__all__ = ["FakeClock"]
