#!/usr/bin/env bash
# Set up what is missing, then run the test suite against the real Docker engine.
# Extra arguments go to pytest (e.g. -m slow for the long end-to-end cases, -m '' for all).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# the linters as pyproject.toml configures them, first: they answer in seconds
.venv/bin/python -m ruff check --quiet src tests || { echo "test.sh: ruff found the faults above" >&2; exit 1; }
.venv/bin/python -m mypy || { echo "test.sh: mypy found the faults above" >&2; exit 1; }
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$rc"
