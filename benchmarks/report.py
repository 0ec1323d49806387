"""What the benchmarks share: printing numbers (aligned text, or JSON with --json), and
stopping cleanly on SIGTERM."""

from __future__ import annotations

import json
import signal
import sys


def print_numbers(numbers: dict, as_json: bool) -> None:
    if as_json:
        json.dump(numbers, sys.stdout, indent=2)
        print()
        return
    width = max(map(len, numbers))
    for key, value in numbers.items():
        print(f"{key:<{width}}  {value}")


def stop_on_sigterm() -> None:
    """SIGTERM stops the benchmark like Ctrl-C does, so that the containers and images
    it made are removed on the way out."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, interrupt)
