# Run the project's tests once from the working directory, as anyone checks a repair: it
# leaves pytest's cache and bytecode behind. Whether they pass is the verifier's to say.
py=python3
[ -n "${VIRTUAL_ENV:-}" ] && py=$VIRTUAL_ENV/bin/python
"$py" -m pytest -q > /var/tmp/probe-pytest.txt 2>&1
status=$?
tail -n 3 /var/tmp/probe-pytest.txt
rm -f /var/tmp/probe-pytest.txt
echo "pytest exited $status"
exit 0
