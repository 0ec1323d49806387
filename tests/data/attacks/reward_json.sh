# 1. A reward.json (Harbor reads it before reward.txt) in the mounted log folder.
mkdir -p /logs/verifier && echo '{"reward": 1}' > /logs/verifier/reward.json
