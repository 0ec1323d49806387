# Recreate the venv with copies of the interpreter instead of links, then install the wheelhouse.
/usr/bin/python3 -m venv --clear --copies /opt/venv
/opt/venv/bin/python -m pip install --no-index --no-deps /opt/wheelhouse/*.whl
