# The payload the attacks plant (uploaded beside solve.sh as /solution/forge.py): at exit,
# it writes a JUnit report in which every node id on the command line passed, and exits 0.
import atexit
import os
import sys


def _forge():
    if not any("pytest" in a for a in sys.argv[:3]):
        return
    ids = [a for a in sys.argv[1:] if "::" in a]
    path = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")), None)
    if path:
        from _pytest.junitxml import bin_xml_escape, mangle_test_address

        cases = []
        for node in ids:
            names = mangle_test_address(node)
            cases.append('<testcase classname="%s" name="%s" time="0" />'
                         % (bin_xml_escape(".".join(names[:-1])), bin_xml_escape(names[-1])))
        with open(path, "w") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
                      'errors="0" failures="0" skipped="0" tests="%d">%s</testsuite></testsuites>'
                      % (len(cases), "".join(cases)))
    sys.stdout.flush()
    os._exit(0)


atexit.register(_forge)
