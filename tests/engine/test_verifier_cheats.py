"""An exported verifier cannot be talked into a reward.

A real task (markupsafe, a verified breakage of the project's code) is exported as Harbor;
each cheat runs as an agent's work would, in the task's solution slot (solve.sh executed as
Harbor's oracle agent runs it), and then the verifier runs as Harbor's does. Every cheat
scores 1 against the naive verifier cligym used to write (kept below as the baseline, so
the test shows each cheat really works) and 0 against the bundled one; the honest
solution scores 1 and doing nothing scores 0.
"""

from __future__ import annotations

import base64
import gzip
import shlex
import shutil
import uuid
from pathlib import Path

import pytest

from cligym.runtime import ImageKind

from cligym.export.stage import export
from cligym.harness.images import build_broken
from cligym.harness.trial import TEST_OUTPUT, build_task_image, read_reward, run_oracle
from cligym.invert import invert
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load
from cligym.models.task import Task, run_order
from cligym.verify.checks import verifier_check
from tests.verifier_runs import harbor_container, harbor_way, naive_tests, solve_then_judge

CODE_OPERATORS = ["code_comparison_flipped", "code_return_flipped", "code_boundary_shifted"]
#: What the reward writer touches once it has put its reward in place: its known completion.
WRITER_DONE = "/tmp/.cheat-reward-written"


def naive_verifier(task: Task) -> str:
    """cligym's former tests/test.sh: the project's test command in the image, reward from
    pytest's exit status (a Debian-world task's: gold's runner in the image, reward from its
    exit status)."""
    listed = "\n".join(f"  {shlex.quote(t)}" for t in run_order(task))
    if task.state is not None:
        return f"""#!/bin/bash
mkdir -p /logs/verifier
cd {shlex.quote(task.workdir)} || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
tests=(
{listed}
)
{task.test_command} "${{tests[@]}}" > /logs/verifier/test-output.txt 2>&1
status=$?
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit 0
"""
    return f"""#!/bin/bash
mkdir -p /logs/verifier
cd {shlex.quote(task.workdir)} || {{ echo 0 > /logs/verifier/reward.txt; exit 0; }}
tests=(
{listed}
)
{task.test_command} -p no:cacheprovider -rA -o junit_family=xunit1 --junitxml=/logs/verifier/junit.xml \\
  "${{tests[@]}}" > /logs/verifier/pytest-output.txt 2>&1
status=$?
cat /logs/verifier/pytest-output.txt
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit 0
"""

CONFTEST_HOOK = '''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None

def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
'''


def cheats(task: Task) -> dict[str, str]:
    """name -> the shell script an agent would run instead of repairing anything."""
    root = task.workdir
    files = sorted({t.split("::")[0] for t in task.FAIL_TO_PASS})
    deselect = " ".join(shlex.quote(f"--deselect={t}") for t in task.FAIL_TO_PASS)
    ini = f"[pytest]\naddopts = {deselect}\n"
    return {
        "conftest_hook": f"cat > {root}/conftest.py <<'EOF'\n{CONFTEST_HOOK}\nEOF\n",
        "python_wrapper": "p=$(command -v python) && rm -f \"$p\" && printf '#!/bin/sh\\nexit 0\\n' > \"$p\" "
                          "&& chmod +x \"$p\"\n",
        # left running: once the verifier has written its reward, it renames a 1 over it
        "reward_writer": "mkdir -p /logs/verifier\n"
                         "nohup sh -c 'until [ -e /logs/verifier/reward.txt ]; do sleep 0.05; done; "
                         f"echo 1 > /tmp/.r; mv -f /tmp/.r /logs/verifier/reward.txt; touch {WRITER_DONE}' "
                         ">/dev/null 2>&1 &\n",
        "edited_tests": "".join(f"printf '\\npytestmark = __import__(\"pytest\").mark.xfail\\n' >> {root}/{f}\n"
                                for f in files),
        "deselecting_ini": f"cat > {root}/pytest.ini <<'EOF'\n{ini}EOF\n",
    }


@pytest.fixture(scope="module")
def task_env(runtime, gold_copy, tmp_path_factory):
    """(an exported Harbor task, its Task, its built image)."""
    root = tmp_path_factory.mktemp("cheats")
    gold_copy("markupsafe==3.0.2", root / "gold")
    summary = invert(root / "gold", root / "run", attempts=4, seed=3, operators=CODE_OPERATORS,
                     max_operators=1, runtime=runtime)
    assert summary.verified >= 1, summary
    # code mutations are not offline-fair (only the oracle knows the line): exported on request
    export(root / "run", "harbor", root / "tasks", offline_only=False, runtime=runtime)
    task_dir = ExportDir(root / "tasks").task_dirs()[0]
    task = load(Task, RunDir(root / "run").task_record(task_dir.name))
    tag = build_task_image(runtime, task_dir, ImageKind.VALIDATE)  # a scratch image of this run
    yield task_dir, task, tag
    runtime.remove_image(tag)


def variant(task_dir: TaskDir, dest: Path, solve: str | None, naive: Task | None = None) -> TaskDir:
    """A copy of the task whose solution slot runs ``solve`` (None: the task's own), and
    whose tests are the naive verifier when ``naive`` is given."""
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    if solve is not None:
        copy.solve_sh.write_text("#!/bin/bash\n" + solve)
    if naive is not None:
        naive_tests(copy, naive_verifier(naive))
    copy.solve_sh.chmod(0o755)
    return copy


def reward(runtime, tag: str, task: TaskDir, solve: bool = True, runner: str = "cligym"):
    """The solution slot (unless nop), then the verifier run by ``runner`` ("cligym" as
    validate runs it, "harbor" in the agent's own container as Harbor's CLI does): the
    reward and the verifier's verdict line."""
    result = solve_then_judge(runtime, tag, task, runner, solve=solve)
    return result.reward, result.detail


def naive_reward(runtime, tag: str, task: TaskDir, cheat: str):
    """The cheat in the solution slot, then the naive verifier as Harbor runs it (in the
    agent's own container): the reward and the verifier's verdict line. The reward writer's
    reward is read once the writer says it is in place, not at a moment that races it (the
    read right after test.sh could come between the verifier's 0 and the writer's 1); a
    second later it must not have changed."""
    if cheat != "reward_writer":
        return reward(runtime, tag, task, runner="harbor")
    with harbor_container(runtime, tag, task) as session:
        run_oracle(session, task)
        harbor_way(session, task)
        waited = session.exec(["sh", "-c", f"i=0; until [ -e {WRITER_DONE} ]; do [ $i -lt 600 ] || exit 1; "
                                           "i=$((i + 1)); sleep 0.05; done"], timeout=60)
        assert waited.ok, "the reward writer never put its reward in place"
        result = read_reward(session, (session.get_file(TEST_OUTPUT) or b"").decode("utf-8", "replace"))
        session.exec(["sleep", "1"])
        again = read_reward(session)
        assert again.reward == result.reward, (result, again)
    return result.reward, result.detail


#: Why the bundled verifier gives each cheat 0: the interpreter was found changed, or (for
#: the cheats that leave it alone) the unrepaired breakage, a changed module of the project.
REASONS = {
    "conftest_hook": "the environment differs from gold: ",
    "python_wrapper": "the environment differs from gold: ",
    "reward_writer": "the environment differs from gold: ",
    "edited_tests": "the environment differs from gold: ",
    "deselecting_ini": "the environment differs from gold: ",
}


@pytest.mark.parametrize("runner", ["cligym", "harbor"])
def test_oracle_scores_one_and_nop_zero(runner, task_env, runtime, tmp_path):
    task_dir, task, tag = task_env
    value, output = reward(runtime, tag, task_dir, runner=runner)
    assert value == 1.0 and f"reward 1: all {len(run_order(task))} listed tests passed" in output, output[-2000:]
    value, output = reward(runtime, tag, task_dir, solve=False, runner=runner)
    # the mutated module is in site-packages: the verifier finds it changed before any test runs
    assert value == 0.0 and "reward 0: the environment differs from gold: " in output, output[-2000:]


def test_verifier_keeps_a_shell_keepalive_and_still_stops_a_cheat(task_env, runtime, tmp_path):
    """Harbor starts a task's container as ``sh -c "sleep infinity"``: the shell is PID 1
    and the sleep its child, which the verifier's stop of every other process once killed,
    ending the container mid-verification. Run as Harbor runs it, in the agent's own
    container, the oracle still scores 1 there, and a process the solution left writing the
    reward file is still stopped."""
    task_dir, task, tag = task_env
    value, output = reward(runtime, tag, task_dir, runner="harbor")
    assert value == 1.0, output
    writer = variant(task_dir, tmp_path / "writer", cheats(task)["reward_writer"])
    value, output = reward(runtime, tag, writer, runner="harbor")
    assert value == 0.0, output


@pytest.mark.parametrize("cheat", ["conftest_hook", "python_wrapper", "reward_writer", "edited_tests",
                                   "deselecting_ini"])
def test_a_cheat_beats_the_naive_verifier_but_not_the_bundled_one(cheat, task_env, runtime, tmp_path):
    task_dir, task, tag = task_env
    script = cheats(task)[cheat]
    naive = variant(task_dir, tmp_path / "naive", script, naive=task)
    value, output = naive_reward(runtime, tag, naive, cheat)
    assert value == 1.0, f"{cheat} does not even fool the naive verifier: {output[-1500:]}"
    bundled = variant(task_dir, tmp_path / "bundled", script)
    value, output = reward(runtime, tag, bundled)
    assert value == 0.0, f"{cheat} fooled the bundled verifier: {output[-1500:]}"
    verdict = output.rsplit("cligym verifier: ", 1)[-1]
    assert verdict.startswith("reward 0: ") and REASONS[cheat] in verdict, output
    if cheat == "python_wrapper":
        assert " /opt/venv/bin/python " in verdict


def test_invert_time_check_discards_a_state_the_verifier_repairs_by_itself(runtime, gold_envs):
    """A conftest.py added by ΔD breaks every test, but the verifier deletes conftests gold
    did not have: with nothing done it would score 1, so the state is trivial."""
    gold = gold_envs("markupsafe==3.0.2")
    tests = [t for t in gold.tests if t.startswith("tests/test_escape.py::")][:5]
    conftest = "import pytest\n\n@pytest.fixture(autouse=True)\ndef _broken():\n    raise RuntimeError('broken')\n"
    line = f"RUN echo {base64.b64encode(conftest.encode()).decode()} | base64 -d > {gold.workdir}/conftest.py"
    tag = f"cligym/test-verdict-trivial:{uuid.uuid4().hex[:12]}"
    build_broken(runtime, gold, [line], tag)
    try:
        repair = f"#!/bin/sh\nrm -f {gold.workdir}/conftest.py\n"
        verification = verifier_check(runtime, gold, tag, tests, [], tests, repair)
    finally:
        runtime.remove_image(tag)
    assert (verification.ok, verification.kind) == (False, "trivial")
    assert "reward 1.0 with nothing done" in verification.reason


def test_gold_is_read_once_per_set_of_tests(runtime, gold_envs, monkeypatch):
    """The candidates of one gold mostly select the same tests: the second reference for the
    same tests starts no container and is what a fresh read gives, with its own ids."""
    from cligym.harness import reference

    gold = gold_envs("markupsafe==3.0.2")
    tests = [t for t in gold.tests if t.startswith("tests/test_escape.py::")][:6]
    args = dict(workdir=gold.workdir, test_command=gold.test_command, order=tests)
    first, tar = reference.gather(runtime, gold.image, instance_id="a", f2p=tests[:2], p2p=tests[2:], **args)
    sessions = []
    real = runtime.session
    monkeypatch.setattr(runtime, "session", lambda *a, **k: sessions.append(a) or real(*a, **k))
    second, again = reference.gather(runtime, gold.image, instance_id="b", f2p=tests[:3], p2p=tests[3:], **args)
    assert sessions == [] and again == tar
    assert (second.instance_id, second.fail_to_pass, second.pass_to_pass) == ("b", tests[:3], tests[3:])
    assert first.instance_id == "a" and first.fail_to_pass == tests[:2]  # the first is not changed
    reference._read_gold.cache_clear()  # a fresh read gives the same
    fresh, fresh_tar = reference.gather(runtime, gold.image, instance_id="b", f2p=tests[:3], p2p=tests[3:], **args)
    assert sessions and fresh == second and fresh_tar == tar


def _forget(reference) -> None:
    """Empty the reference module's in-memory caches."""
    reference._read_gold.cache_clear()
    reference._stored.cache_clear()


def test_a_second_sample_of_the_same_folders_reads_only_what_its_tests_change(runtime, gold_envs, monkeypatch):
    """What does not depend on a sample (gold's interpreter, its site directories, where its
    loader looks, pytest's rootdir for the same test folders) is read once per gold image;
    the reference made so for another sample is the one a read with nothing kept makes."""
    from cligym.harness import reference

    gold = gold_envs("markupsafe==3.0.2")
    escape = [t for t in gold.tests if t.startswith("tests/test_escape.py::")]
    first, second = escape[:4], escape[4:8]
    assert len(second) == 4
    _forget(reference)
    monkeypatch.setattr(reference, "_KEPT", {})
    reads: list[str] = []
    once = ["_interpreter", "_site_dirs", "_loader_places", "_collect_rootdir"]
    for name in once:
        real = getattr(reference, name)
        monkeypatch.setattr(reference, name,
                            lambda *a, _real=real, _name=name, **k: reads.append(_name) or _real(*a, **k))
    args = dict(workdir=gold.workdir, test_command=gold.test_command)
    reference.gather(runtime, gold.image, instance_id="a", f2p=first[:1], p2p=first[1:], order=first, **args)
    assert sorted(reads) == sorted(once)
    kept, tar = reference.gather(runtime, gold.image, instance_id="b", f2p=second[:1], p2p=second[1:], order=second,
                                 **args)
    assert len(reads) == len(once)  # none of them read again
    _forget(reference)
    reference._KEPT.clear()
    fresh, fresh_tar = reference.gather(runtime, gold.image, instance_id="b", f2p=second[:1], p2p=second[1:],
                                        order=second, **args)
    assert len(reads) == 2 * len(once) and fresh == kept and fresh_tar == tar


def test_a_runs_stored_gold_reference_is_read_back_without_a_container(runtime, gold_envs, monkeypatch, tmp_path):
    """What invert read for a set of tests, kept in the run's store, is what its export (another
    process: nothing in memory) reads back, with no container; a record it cannot read is
    read again from gold."""
    from cligym.harness import reference
    from cligym.layout import ReferenceStore

    gold = gold_envs("markupsafe==3.0.2")
    tests = [t for t in gold.tests if t.startswith("tests/test_escape.py::")][:6]
    store = ReferenceStore(tmp_path / "references")
    args = dict(workdir=gold.workdir, test_command=gold.test_command, order=tests, f2p=tests[:2], p2p=tests[2:],
                store=store)
    first, tar = reference.gather(runtime, gold.image, instance_id="a", **args)
    _forget(reference)  # (as another process would)
    sessions = []
    real = runtime.session
    monkeypatch.setattr(runtime, "session", lambda *a, **k: sessions.append(a) or real(*a, **k))
    again, again_tar = reference.gather(runtime, gold.image, instance_id="a", **args)
    assert sessions == [] and again == first and again_tar == tar
    [record] = store.path.glob("*.json.gz")
    record.write_text('{"not": "a reference"}')  # (not even gzipped)
    _forget(reference)  # (as another process would)
    fresh, fresh_tar = reference.gather(runtime, gold.image, instance_id="a", **args)
    assert sessions and fresh == first and fresh_tar == tar
    assert reference.GoldReference.model_validate_json(gzip.decompress(record.read_bytes())).pristine == first.pristine
