"""Credentials for a fetch: one rule for every source.

A target (or the Prometheus server) carries at most one of a bearer token
file and basic auth; both sources build their ``httpx.Auth`` here, so a
rotated token file or an exclusive-options mistake behaves the same in both.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import httpx

from ptmon.monitor.settings import Target, secret_problem
from ptmon.monitor.sources.errors import CredentialsError

__all__ = ["BearerTokenFile", "auth_for"]


class BearerTokenFile(httpx.Auth):
    """``Authorization: Bearer`` from a file, re-read when the file changes.

    Token files are rotated in place (Kubernetes projected tokens); checking
    the file's stat on each scrape picks up a new token without a restart at
    the cost of one ``stat`` call.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._token = ""

    def token(self) -> str:
        try:
            st = os.stat(self._path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if stamp != self._stamp:
                with open(self._path, encoding="utf-8") as f:
                    token = f.read().strip()
                self._token, self._stamp = token, stamp
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CredentialsError(f"bearer token file {self._path}: {reason}") from None
        if not self._token:
            raise CredentialsError(f"bearer token file {self._path} is empty")
        problem = secret_problem(self._token)
        if problem is not None:
            raise CredentialsError(f"bearer token file {self._path}: {problem} (its content is not shown)")
        return self._token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


def auth_for(target: Target, *, where: str) -> httpx.Auth | None:
    """The credentials ``target`` is fetched with; ``where`` names it when both kinds are set."""
    if target.bearer_token_file and target.basic_auth:
        raise ValueError(f"{where}: bearer_token_file and basic_auth are exclusive")
    if target.bearer_token_file:
        return BearerTokenFile(target.bearer_token_file)
    if target.basic_auth:
        return httpx.BasicAuth(*target.basic_auth)
    return None
