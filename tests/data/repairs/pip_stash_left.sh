# An interrupted pip uninstall of a package, then a reinstall: pip's stash copy of the
# package stays in site-packages under a "~" name (pip warns "Ignoring invalid
# distribution" and never imports it).
for sp in /opt/venv/lib/python3*/site-packages; do
  cp -a "$sp/pluggy" "$sp/~luggy"
  cp -a "$sp"/pluggy-*.dist-info "$sp/~luggy-0.0.dist-info"
done
