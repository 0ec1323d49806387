# 3. A new top-level module in site-packages that the standard library looks for and
#    tolerates missing (copy.py: from org.python.core import PyStringMap).
for sp in /opt/venv/lib/python3*/site-packages; do
  mkdir -p "$sp/org/python"
  cp /solution/forge.py "$sp/org/__init__.py"
  : > "$sp/org/python/__init__.py"
  : > "$sp/org/python/core.py"
done
