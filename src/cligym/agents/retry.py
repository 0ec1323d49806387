"""When the model client tries again (``cligym.agents.client``): a failed attempt that may be
retried (``Failed``), the wait before the next one (``Wait``: the server's Retry-After, or
tenacity's exponential back-off with jitter) and when to stop trying (``Stop``)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import tenacity

from cligym.agents.config import ModelConfig

#: Retries for an endpoint that cannot be reached and has never answered.
FIRST_CONTACT_RETRIES = 2


class Failed(Exception):
    """One failed attempt that may be retried: ``reason`` (one line), ``kind`` (timeout,
    unreachable, broken, status; html, error or garbage for an unusable answer, see
    ``Unusable``) and the server's ``delay`` (Retry-After)."""

    def __init__(self, reason: str, kind: str, *, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.delay = reason, kind, delay

    @property
    def unusable(self) -> bool:
        return self.kind in ("html", "error", "garbage")


class Wait(tenacity.wait.wait_base):
    """The wait before the next attempt: the server's Retry-After plus up to a tenth more, or
    exponential back-off with jitter: ``backoff_base`` doubled per retry (at most
    ``backoff_cap``), of which half is waited for sure and half at random. A Retry-After of
    0 gets the back-off too (as the OpenAI SDK does): workers refused at the same moment
    would otherwise come back at the same moment, and the same one could be refused each
    time."""

    def __init__(self, config: ModelConfig, failures: list[Failed]) -> None:
        self.failures = failures
        half, cap = config.backoff_base / 2, config.backoff_cap / 2  # "equal jitter": half fixed, half random
        self.backoff = (tenacity.wait_exponential(multiplier=half, max=cap)
                        + tenacity.wait_random_exponential(multiplier=half, max=cap))

    def __call__(self, state: tenacity.RetryCallState) -> float:
        delay = self.failures[-1].delay if self.failures else None
        if delay is not None and delay > 0:
            return delay * (1 + random.random() / 10)
        return self.backoff(state)


class Stop(tenacity.stop.stop_base):
    """No wait that ends past the caller's deadline, none once the run is stopping, and no
    more than ``FIRST_CONTACT_RETRIES`` for an endpoint that has never answered anything and
    cannot be reached (a wrong URL, a server not started) so that the user hears of it at once."""

    def __init__(self, deadline: float | None, stopping: threading.Event, client: Any,
                 failures: list[Failed]) -> None:
        self.deadline, self.stopping, self.client, self.failures = deadline, stopping, client, failures

    def __call__(self, state: tenacity.RetryCallState) -> bool:
        if self.stopping.is_set():
            return True
        if (not self.client.reached and self.failures and self.failures[-1].kind == "unreachable"
                and len(self.failures) > FIRST_CONTACT_RETRIES):
            return True
        return self.deadline is not None and time.monotonic() + (state.upcoming_sleep or 0) >= self.deadline
