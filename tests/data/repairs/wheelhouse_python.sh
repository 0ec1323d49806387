# Reinstall every wheel gold was built from, with the venv's `python -m pip`.
python -m pip install --no-index --force-reinstall --no-deps /opt/wheelhouse/*.whl
