"""Printing a benchmark's numbers: aligned text, or JSON with --json."""

from __future__ import annotations

import json
import sys


def print_numbers(numbers: dict, as_json: bool) -> None:
    if as_json:
        json.dump(numbers, sys.stdout, indent=2)
        print()
        return
    width = max(map(len, numbers))
    for key, value in numbers.items():
        print(f"{key:<{width}}  {value}")
