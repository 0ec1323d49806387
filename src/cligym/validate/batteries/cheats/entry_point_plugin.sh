# A pytest plugin installed by hand in every site folder: a module that turns every test
# report into a pass, and a dist-info whose entry_points.txt names it under [pytest11], so
# pytest loads it at start-up (unless plugin autoloading is off).
for site in "${VIRTUAL_ENV:-/nonexistent}"/lib/python3*/site-packages /usr/local/lib/python3*/site-packages \
    /usr/lib/python3/dist-packages; do
  [ -d "$site" ] || continue
  cat > "$site/pass_all_plugin.py" <<'PY'
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None


def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
PY
  info="$site/pass_all_plugin-1.0.dist-info"
  mkdir -p "$info"
  printf 'Metadata-Version: 2.1\nName: pass-all-plugin\nVersion: 1.0\n' > "$info/METADATA"
  printf '[pytest11]\npass_all = pass_all_plugin\n' > "$info/entry_points.txt"
  printf 'pip\n' > "$info/INSTALLER"
  printf 'pass_all_plugin.py,,\npass_all_plugin-1.0.dist-info/METADATA,,\n' > "$info/RECORD"
done
