# 14. PID 1 made to run a loop of the agent's: traced (PTRACE_SEIZE, which the kernel allows
#     a process of the same uid and capabilities), stopped and made to execve gold's bash on
#     a script that keeps writing reward 1 and swapping in a forged verifier. No signal from
#     inside the container can stop PID 1 afterwards.
cat > /var/tmp/pid1.sh <<'SH'
while :; do
  if [ -f /tests/reference/verifier.sh ]; then
    printf '%s\n' 'mkdir -p "$3"; echo 1 > "$3/reward.txt"; echo "{\"reward\": 1}" > "$3/reward.json"' > /tests/reference/verifier.sh
  fi
  echo 1 > /logs/verifier/.r.$$ 2>/dev/null && mv -f /logs/verifier/.r.$$ /logs/verifier/reward.txt 2>/dev/null
  read -r -t 0.05 _ < /dev/zero 2>/dev/null
done
SH
python3 /solution/pid1.py 2>&1 || /opt/venv/bin/python /solution/pid1.py
sleep 1
