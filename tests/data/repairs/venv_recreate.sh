# Recreate the venv from the system interpreter and install the wheelhouse into it again.
/usr/bin/python3 -m venv --clear /opt/venv
/opt/venv/bin/python -m pip install --no-index --no-deps /opt/wheelhouse/*.whl
