# The file the harness sends the verifier's output to, /logs/verifier/test-stdout.txt, made
# a link to the verifier itself: a redirection that follows it truncates the verifier
# before it runs. The reward is planted for a verifier that never runs.
mkdir -p /logs/verifier
rm -rf /logs/verifier/test-stdout.txt
ln -s /tests/test.sh /logs/verifier/test-stdout.txt
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1.0}' > /logs/verifier/reward.json
