"""The typed fetch errors: one mapping from transport exceptions, and callers branching on types."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ptmon.monitor.sources.errors import (
    BadStatus,
    BodyTooLarge,
    ConnectFailed,
    FetchError,
    FetchTimeout,
    ProtocolFailed,
    fetching,
)

REQUEST = httpx.Request("GET", "http://t:9100/metrics")


@pytest.mark.parametrize(("raised", "kind", "message"), [
    (httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST), ConnectFailed, "connection refused"),
    (httpx.ReadTimeout("read", request=REQUEST), FetchTimeout, "timed out after 0.5 s"),
    (httpx.RemoteProtocolError("illegal status line", request=REQUEST), ProtocolFailed,
     "RemoteProtocolError: illegal status line"),
    (httpx.ReadError("", request=REQUEST), ProtocolFailed, "ReadError"),
])
async def test_transport_exceptions_become_typed_fetch_errors(raised: Exception, kind: type, message: str) -> None:
    with pytest.raises(kind) as info:
        async with fetching(0.5):
            raise raised
    assert str(info.value) == message and isinstance(info.value, FetchError)
    assert info.value.__cause__ is None  # the wrapped exception's text is all the caller gets


async def test_the_deadline_covers_the_whole_exchange() -> None:
    with pytest.raises(FetchTimeout, match=r"^timed out after 0.05 s$"):
        async with fetching(0.05):
            await asyncio.sleep(5)


async def test_fetch_errors_raised_inside_pass_unchanged_and_a_cancel_goes_on_up() -> None:
    too_big = BodyTooLarge(16 * 2**20)
    with pytest.raises(BodyTooLarge) as info:
        async with fetching(1.0):
            raise too_big
    assert info.value is too_big and str(too_big) == "body exceeds 16 MiB" and too_big.limit == 16 * 2**20
    with pytest.raises(BadStatus):
        async with fetching(1.0):
            raise BadStatus("HTTP 500 Internal Server Error", status=500)

    async def cancelled() -> None:
        async with fetching(5.0):
            await asyncio.sleep(5)

    task = asyncio.ensure_future(cancelled())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

