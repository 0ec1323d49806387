# Reinstall every wheel gold was built from, with `python3 -m pip` (other console-script shebangs).
python3 -m pip install --no-index --force-reinstall --no-deps /opt/wheelhouse/*.whl
