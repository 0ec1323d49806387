# Restore the venv from a copy (new inodes and timestamps, the same bytes).
cp -a /opt/venv /opt/venv.copy && rm -rf /opt/venv && mv /opt/venv.copy /opt/venv
