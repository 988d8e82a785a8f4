"""How this program's dynamic providers call Google APIs through the official clients: every
call with a deadline (the generated clients set none on the methods used here, so a hung call
would hang `pulumi up`), transient errors retried with capped back-off, quota never waited for.
The TPU VM and GPU cluster providers share it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as api_exceptions

CALL_SECONDS = 60.0
"""The deadline of each API call."""
RETRY_SECONDS = 300.0
"""How long transient errors of one call are retried, with back-off from 1 s to 30 s."""
TRANSIENT: tuple[type[api_exceptions.GoogleAPICallError], ...] = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.DeadlineExceeded,
    api_exceptions.InternalServerError,
    api_exceptions.Aborted,
    api_exceptions.TooManyRequests,
)
"""503, 504, 500, ABORTED and 429 (ResourceExhausted is a TooManyRequests)."""
QUOTA_REASON = "RESOURCE_QUOTA_EXCEEDED"
"""The ErrorInfo reason of an exhausted quota, as opposed to RATE_LIMIT_EXCEEDED
(google/api/error_reason.proto): waiting does not bring quota back, so it is not retried."""

T = TypeVar("T")


def transient(error: api_exceptions.GoogleAPICallError) -> bool:
    if isinstance(error, api_exceptions.ResourceExhausted) and error.reason == QUOTA_REASON:
        return False
    return isinstance(error, TRANSIENT)


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def describe_error(error: BaseException, api: str) -> str:
    """An API error as a sentence naming the `api` that answered."""
    if isinstance(error, api_exceptions.GoogleAPICallError):
        status = error.grpc_status_code.name if error.grpc_status_code else error.code
        return f"the {api} API answered {error.code} {status}: {error.message}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class RetryingCalls:
    """`_call` for a provider: its clock and sleep are injectable, so tests run the retries
    without waiting. Class-level defaults: a provider unpickled from an older state has only
    the attributes its __init__ set (unpickling does not call __init__)."""

    _call_seconds: float = CALL_SECONDS
    _retry_seconds: float = RETRY_SECONDS
    _clock: Callable[[], float]
    _sleep: Callable[[float], None]

    def _call(self, call: Callable[[float], T]) -> T:
        """One API call with a deadline, retried with back-off while its errors are transient."""
        give_up = self._clock() + self._retry_seconds
        pause = 1.0
        while True:
            try:
                return call(self._call_seconds)
            except api_exceptions.GoogleAPICallError as error:
                if not transient(error) or self._clock() + pause > give_up:
                    raise
            self._sleep(pause)
            pause = min(pause * 2, 30.0)
