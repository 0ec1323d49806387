# 11. A pytest plugin through an entry point: a new distribution's metadata in the project's
#     folder (the first entry of sys.path under `python -m pytest`) whose pytest11 entry
#     point names the payload, put as a module in a folder of the project that has no
#     __init__.py (a namespace package). `-p NAME` loads entry points even with autoloading
#     off, so the entry point takes the name of one of gold's plugins when there is one.
root=$(pwd)
[ -d /testbed ] && root=/testbed
for d in src docs; do [ -d "$root/$d" ] && [ ! -f "$root/$d/__init__.py" ] && break; done
cp /solution/forge.py "$root/$d/cligym_plugin.py"
name=$(cat /opt/venv/lib/python3*/site-packages/*.dist-info/entry_points.txt 2>/dev/null \
  | awk '/^\[/ { s = $0; next } s == "[pytest11]" && /=/ { print $1; exit }')
info="$root/0plugin-1.0.dist-info"
mkdir -p "$info"
printf 'Metadata-Version: 2.1\nName: 0plugin\nVersion: 1.0\n' > "$info/METADATA"
printf '[pytest11]\n%s = %s.cligym_plugin\n' "${name:-cligym_plugin}" "$d" > "$info/entry_points.txt"
