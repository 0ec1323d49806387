#!/usr/bin/env bash
# Set up what is missing, then run the cligym demo on its built-in default project.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/cligym demo "$@"
