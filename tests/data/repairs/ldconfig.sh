# Rebuild the dynamic loader's cache and its library links.
ldconfig
