# Recreate the virtual environment from its base interpreter (venv --clear) and install
# every wheel of the wheelhouse into it again.
set -e
[ -n "${VIRTUAL_ENV:-}" ] && [ -f "$VIRTUAL_ENV/pyvenv.cfg" ] || exit 77
ls /opt/wheelhouse/*.whl > /dev/null 2>&1 || exit 77
home=$(sed -n 's/^home[[:space:]]*=[[:space:]]*//p' "$VIRTUAL_ENV/pyvenv.cfg" | head -n 1)
base=$home/python3
[ -x "$base" ] || base=/usr/bin/python3
"$base" -m venv --clear "$VIRTUAL_ENV"
"$VIRTUAL_ENV/bin/python" -m pip install --no-index --no-deps /opt/wheelhouse/*.whl
