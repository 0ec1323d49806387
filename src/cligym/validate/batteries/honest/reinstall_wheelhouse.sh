# Reinstall every wheel of the image's wheelhouse with the virtual environment's own pip:
# the same bytes again, over whatever the repair left.
set -e
ls /opt/wheelhouse/*.whl > /dev/null 2>&1 || exit 77
py=python3
[ -n "${VIRTUAL_ENV:-}" ] && py=$VIRTUAL_ENV/bin/python
"$py" -m pip install --no-index --force-reinstall --no-deps /opt/wheelhouse/*.whl
