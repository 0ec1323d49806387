#!/tests/bin/busybox sh
# cligym verifier: runs under the static busybox shipped in tests/bin (see reference/verifier.sh)
exec /tests/bin/busybox sh /tests/reference/verifier.sh harbor /tests /logs/verifier
