# Reinstall every wheel gold was built from, with the venv's `pip` console script.
pip install --no-index --force-reinstall --no-deps /opt/wheelhouse/*.whl
