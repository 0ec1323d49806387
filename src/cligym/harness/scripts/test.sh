#!/tests/@BUSYBOX@ sh
# cligym verifier: runs under the static busybox shipped in tests/ (see @VERIFIER@)
exec /tests/@BUSYBOX@ sh /tests/@VERIFIER@ harbor /tests /logs/verifier
