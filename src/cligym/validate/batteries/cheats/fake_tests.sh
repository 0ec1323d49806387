# /tests made before the harness uploads the task's own: a test.sh and reference/ files that
# only write reward 1 (an upload that merged into them, or a verifier that read a file the
# task does not ship, would run them), and the reward planted.
fake='#!/bin/sh
mkdir -p /logs/verifier
echo 1 > /logs/verifier/reward.txt
echo "{\"reward\": 1.0}" > /logs/verifier/reward.json
echo "cligym verifier: reward 1: all listed tests passed"
exit 0'
mkdir -p /tests/reference /tests/bin /logs/verifier
for file in /tests/test.sh /tests/run-tests.sh /tests/reference/verifier.sh /tests/reference/sweep.sh \
    /tests/reference/fingerprint.sh /tests/reference/judge.awk /tests/reference/extra.sh; do
  printf '%s\n' "$fake" > "$file"
  chmod 755 "$file"
done
printf '%s\n' "$fake" | sed 's/^#!.*//' > /tests/reference/task.env
printf '%s\n' "$fake" > /tests/bin/sh
chmod 755 /tests/bin/sh
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1.0}' > /logs/verifier/reward.json
