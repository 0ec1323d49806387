#!/usr/bin/env bash
# Idempotent set-up on Debian: Docker engine (docker.io), mmdebstrap, busybox-static (and Debian 13's for the
# verifier), gcc and libc6-dev, dpkg-dev, shellcheck, chromium,
# docker-registry (the OCI registry the registry tests serve on 127.0.0.1), a running dockerd
# without a bridge network, and cligym in ./.venv. Safe to run again: it only does what
# is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
# the static busybox every exported verifier runs under (it needs nothing of the task image)
{ [ -x /bin/busybox ] && ! head -c 8192 /bin/busybox | grep -qa ld-linux; } || missing+=(busybox-static)
# a C compiler and static libc for the verifier guard's launcher (built once, kept in the cache)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f "$(cc -print-file-name=libc.a 2>/dev/null)" ] || missing+=(libc6-dev)
# Debian source packages as gold: dpkg-source unpacks them, dpkg-scanpackages indexes the
# image's own apt repository (neither runs anything of the package)
command -v dpkg-source >/dev/null 2>&1 && command -v dpkg-scanpackages >/dev/null 2>&1 || missing+=(dpkg-dev)
# the linter the verifier's shell files are checked with
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
# the headless browser the report's page is checked in (driven by Playwright)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# an OCI registry (the distribution project's), started by the tests that push and pull
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

# the verifier's busybox, Debian 13's: its sha256sum uses the CPU's SHA extensions (without
# it, the verifier runs under the host's /bin/busybox, its hashing about five times slower)
if [ ! -x /usr/local/libexec/cligym/busybox ]; then
  as_root sh scripts/verifier-busybox.sh /usr/local/libexec/cligym/busybox >&2 ||
    echo "setup: no Debian 13 busybox; the verifier uses /bin/busybox" >&2
fi

engine_up() { docker info >/dev/null 2>&1; }
if ! engine_up; then
  echo "setup: starting dockerd (no bridge, no iptables)" >&2
  as_root sh -c 'nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/cligym-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do engine_up && break; sleep 1; done
  engine_up || { echo "setup: dockerd did not start; see /var/log/cligym-dockerd.log" >&2; exit 1; }
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.cligym-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing cligym into .venv" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,ray]" 2>&1 | grep -v "^WARNING: Location" >&2 || true
  .venv/bin/python -c "import cligym, docker, openai, typer, ray"
  touch "$stamp"
fi

# Harbor's own task and trajectory models, for the tests that check exported files against
# them. Harbor declares Python >= 3.12, but its pydantic models import on 3.11, so only
# the package itself (no dependencies) plus what those models need goes into .venv-harbor.
if [ ! -f .venv-harbor/.cligym-installed-2 ]; then
  "$PY" -m venv .venv-harbor
  .venv-harbor/bin/python -m pip install -q --disable-pip-version-check --no-deps --ignore-requires-python \
    harbor==0.25.0 >/dev/null 2>&1 || true
  .venv-harbor/bin/python -m pip install -q --disable-pip-version-check pydantic==2.14.3 toml==0.10.2 \
    pyyaml==6.0.3 pathspec==1.1.1 >/dev/null 2>&1 || true
  # typing.override (3.12) is the one name those modules miss on 3.11: a no-op decorator.
  .venv-harbor/bin/python -c "import typing; typing.override = getattr(typing, 'override', lambda f: f)
from harbor.models.task.config import TaskConfig; from harbor.models.trajectories import Trajectory
from harbor.models.dataset.manifest import DatasetManifest; from harbor.publisher.packager import Packager"
  touch .venv-harbor/.cligym-installed-2
fi
