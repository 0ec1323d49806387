# 12. The same plugin through a distribution under a "~" name in site-packages, where an
#     interrupted pip leaves its stash (pip ignores such a folder; importlib.metadata reads
#     its entry points). Beside gold's own distribution, which of the two a plugin's name
#     loads depends on the folder's order: a second entry point has a name of its own.
root=$(pwd)
[ -d /testbed ] && root=/testbed
for d in src docs; do [ -d "$root/$d" ] && [ ! -f "$root/$d/__init__.py" ] && break; done
cp /solution/forge.py "$root/$d/cligym_plugin.py"
cp /solution/forge.py "$root/$d/cligym_autoload.py"
for sp in /opt/venv/lib/python3*/site-packages; do
  name=$(cat "$sp"/*.dist-info/entry_points.txt 2>/dev/null \
    | awk '/^\[/ { s = $0; next } s == "[pytest11]" && /=/ { print $1; exit }')
  info="$sp/~lugin-1.0.dist-info"
  mkdir -p "$info"
  printf 'Metadata-Version: 2.1\nName: ~lugin\nVersion: 1.0\n' > "$info/METADATA"
  printf '[pytest11]\ncligym_autoload = %s.cligym_autoload\n' "$d" > "$info/entry_points.txt"
  if [ -n "$name" ]; then printf '%s = %s.cligym_plugin\n' "$name" "$d" >> "$info/entry_points.txt"; fi
done
