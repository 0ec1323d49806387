# Reinstall every wheel gold was built from with the venv's `python3.X -m pip` (console
# scripts then name python3.X in their first line).
py=$(ls /opt/venv/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)
"$py" -m pip install --no-index --force-reinstall --no-deps /opt/wheelhouse/*.whl
