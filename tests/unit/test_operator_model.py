"""The operator model without images: typed target data, the embedded originals, the one
place that makes solution scripts, and the registry's category rules."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import types

import pytest

from cligym.harness.repair import RETRY_NOTE
from cligym.invert.operators import (
    CATEGORIES,
    REGISTRY,
    Embedded,
    Operator,
    RestoreOperator,
    Target,
    TargetData,
    get,
    register,
    solution_script,
)
from cligym.invert.operators.base import GoldFiles, categories
from cligym.invert.operators.dependencies import Reinstall, wheel_data
from cligym.models.fs import Entry
from cligym.models.probe import Dist, Probe


def test_categories_come_from_the_registered_operators():
    assert CATEGORIES == tuple(sorted(CATEGORIES)) == categories()
    for op in REGISTRY.values():
        module = sys.modules[type(op).__module__]
        assert op.category == module.CATEGORY and op.category in CATEGORIES
        assert issubclass(op.Data, TargetData)


def test_target_data_is_typed_and_serialisable():
    op = REGISTRY["stdlib_module_corrupted"]
    path = "/usr/lib/python3.11/json/decoder.py"
    target = op.target(path=path, name="json.decoder", touching=["t1"], module="json.decoder", mode="644")
    assert isinstance(target.data, op.Data) and target.key == target.path
    prepared = target.with_data(original=Embedded.of(target.path, b"import re\n", "644"))
    assert prepared.data.module == "json.decoder" and target.data.original is None
    assert op.Data.model_validate_json(prepared.data.model_dump_json()) == prepared.data
    assert '"module":"json.decoder"' in prepared.model_dump_json()
    with pytest.raises(ValueError):
        op.target(path="/x", module="json.decoder", mode="644", modul="typo")
    with pytest.raises(ValueError):
        target.with_data(modul="typo")


def test_describe_fills_name_path_and_data():
    op = REGISTRY["zoneinfo_removed"]
    target = op.target(path="/usr/share/zoneinfo/Asia/Tokyo", name="Asia/Tokyo", zone="Asia/Tokyo")
    text = op.describe(target)
    assert "ZoneInfo('Asia/Tokyo')" in text["symptom"] and "(Asia/Tokyo)" in text["hint"]


def _run(lines: list[str]) -> None:
    subprocess.run(["sh", "-c", "set -e\n" + "\n".join(lines)], check=True)


def test_embedded_file_restores_bytes_and_mode(tmp_path):
    path = tmp_path / "deep" / "dir" / "file.bin"
    content = bytes(range(256)) * 3
    _run(Embedded.of(str(path), content, "750").restore())
    assert path.read_bytes() == content
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750


def test_solution_script_is_the_one_header():
    elf, relink = REGISTRY["elf_magic_corrupt"], REGISTRY["localtime_relinked"]
    first = elf.target(path="/usr/lib/libz.so.1.2.13", name="libz.so.1.2.13")
    second = relink.target(path="/etc/localtime", name="Asia/Kathmandu", original="/usr/share/zoneinfo/Etc/UTC",
                           zone="Etc/UTC", new="/usr/share/zoneinfo/Asia/Kathmandu")
    script = solution_script([(elf, first), (relink, second)])
    assert script == "\n".join([
        "#!/bin/sh",
        "# repair script: one step per change",
        "set -e",
        *RETRY_NOTE,
        'retry=""',
        "# time_zone_data",
        "step_1() {",
        "  ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime",
        "}",
        'step_1 || retry="$retry step_1"',
        "# dynamic_linking",
        "step_2() {",
        "  printf '\\177ELF' | dd of=/usr/lib/libz.so.1.2.13 bs=1 count=4 conv=notrunc status=none",
        "}",
        'step_2 || retry="$retry step_2"',
        'for step in $retry; do "$step"; done',
    ]) + "\n"
    assert solution_script([(relink, second)]).endswith(
        "# time_zone_data\nln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime\n")


def test_a_composite_repair_retries_a_step_another_breakage_stood_in_the_way_of(tmp_path):
    """Step 2 needs what step 1 repairs, yet runs first (last applied, first undone): it
    fails, step 1 runs, and step 2 succeeds when tried again; a step failing twice fails
    the script."""

    class Step:
        category = "c"

        def __init__(self, lines):
            self.lines = lines

        def solution(self, target):
            return self.lines

    flag, done = tmp_path / "flag", tmp_path / "done"
    first, second = Step([f"touch {flag}"]), Step([f"test -e {flag}", f"touch {done}"])
    script = tmp_path / "solve.sh"
    script.write_text(solution_script([(first, None), (second, None)]))
    assert subprocess.run(["sh", str(script)]).returncode == 0 and done.exists()
    script.write_text(solution_script([(Step(["false"]), None), (second, None)]))
    flag.unlink()
    assert subprocess.run(["sh", str(script)]).returncode != 0


def test_restore_operator_needs_a_prepared_target():
    op = REGISTRY["mime_types_shifted"]
    assert isinstance(op, RestoreOperator)
    target = op.target(path="/etc/mime.types", mode="644")
    with pytest.raises(ValueError):
        op.solution(target)
    prepared = target.with_data(original=Embedded.of(target.path, b"text/plain\ttxt\n"))
    assert op.solution(prepared) == prepared.data.original.restore()


def _operator(module: str, **attributes) -> type[Operator]:
    return type("Dummy", (Operator,), {"__module__": module, "name": "dummy_op", "symptom": "", "hint": "",
                                       **attributes})


def test_register_checks_the_category(monkeypatch):
    # no CATEGORY in the module
    with pytest.raises(ValueError, match="CATEGORY"):
        register(_operator(__name__))
    fake = types.ModuleType("fake_category")
    monkeypatch.setitem(sys.modules, "fake_category", fake)
    for bad in ("Not Valid", "", None):
        fake.CATEGORY = bad
        with pytest.raises(ValueError, match="CATEGORY"):
            register(_operator("fake_category"))
    # a category is its module's, and belongs to one module
    fake.CATEGORY = "fake_category"
    with pytest.raises(ValueError, match="not its module"):
        register(_operator("fake_category", category="bytecode"))
    fake.CATEGORY = "bytecode"
    with pytest.raises(ValueError, match="belongs to"):
        register(_operator("fake_category"))
    fake.CATEGORY = "fake_category"
    with pytest.raises(ValueError, match="TargetData"):
        register(_operator("fake_category", Data=dict))
    with pytest.raises(ValueError, match="twice"):
        register(_operator("fake_category", name="elf_magic_corrupt"))
    assert "dummy_op" not in REGISTRY


# ---- fair tasks: what an operator mirrors, what it shows, how it is repaired offline ------

#: Operators out of the default set, and why: the verifier restores test configuration
#: (and runs pytest without plugin autoloading, which hides broken entry points); the code
#: mutations are mutation testing; zeroed ELF magic and a "policy" import hook are
#: contrived; the verifier reads no bytecode cache of the image (stale unchecked bytecode
#: would score 1 with nothing done); the rest have no copy of the original in the image.
NAMED_ONLY = {
    "pytest_ini_warnings_error", "pytest_ini_strict_markers", "conftest_autouse_chdir", "entry_points_corrupted",
    "stale_pyc_unchecked",
    "code_comparison_flipped", "code_return_flipped", "code_boundary_shifted",
    "elf_magic_corrupt", "import_blocker", "stdlib_module_corrupted", "mime_types_shifted",
}


def test_every_operator_names_its_incident_and_its_patterns_compile():
    for op in REGISTRY.values():
        doc = type(op).__dict__.get("__doc__") or ""
        assert doc.strip(), f"{op.name}: no docstring naming the real-world incident it mirrors"
        for pattern in op.shows:
            re.compile(pattern, re.IGNORECASE)


def test_every_default_operator_is_offline_fair_and_shows_its_symptom():
    """A default operator says how its repair is done with only what is in the image, and
    the error text its symptom speaks of; the symptom quotes that text itself."""
    for op in get():
        assert op.offline.strip(), f"{op.name}: a default operator must be offline-fair"
        assert op.shows, f"{op.name}: no patterns of the errors its symptom speaks of"
        assert any(re.search(p, op.symptom, re.IGNORECASE) for p in op.shows), (op.name, op.symptom, op.shows)
        assert "/" not in op.symptom, f"{op.name}: a symptom names no path"


def test_operators_that_are_not_offline_fair_or_realistic_are_named_only():
    assert NAMED_ONLY <= set(REGISTRY)
    assert all(not REGISTRY[name].default for name in NAMED_ONLY)


def _probe(*wheels: str) -> Probe:
    files = {f"/opt/wheelhouse/{w}": Entry(type="f", mode="644", size=1, mtime="0") for w in wheels}
    return Probe(gold_image_id="x", tests=[], touch={}, modules={}, libs=[], dists=[],
                 python={"prefix": "/opt/venv"}, files=files)


def test_reinstall_operators_repair_from_the_wheelhouse_and_refuse_without_a_wheel():
    """The solution is pip reinstalling from the wheel in the image (no index, no bytes);
    with no wheel in the image, prepare refuses the target."""
    dist = Dist(name="Sh", version="2.0.7")
    line = wheel_data(_probe("sh-2.0.7-py3-none-any.whl"), dist)["reinstall"]
    assert line == ("/opt/venv/bin/python -m pip install --quiet --no-index --find-links /opt/wheelhouse "
                    "--force-reinstall --no-deps 'Sh==2.0.7'")
    assert wheel_data(_probe("sh-2.0.6-py3-none-any.whl"), dist)["reinstall"] == ""
    no_files = GoldFiles(lambda path: None)
    reinstallers = [op for op in REGISTRY.values() if isinstance(op, Reinstall)]
    assert {"dependency_uninstalled", "dependency_api_removed", "dependency_version_mismatch",
            "extension_module_removed", "dist_info_removed", "entry_points_corrupted", "console_script_broken",
            "console_script_shebang_wrong", "init_py_removed"} <= {op.name for op in reinstallers}
    for op in reinstallers:
        data = op.Data.model_construct(dist="Sh", version="2.0.7", reinstall="")
        assert op.prepare(Target(path="/x.py", data=data), no_files) is None, op.name
        fair = Target(path="/x.py", data=op.Data.model_construct(dist="Sh", version="2.0.7", reinstall=line))
        solution = op.solution(fair)
        assert solution[-1] == line and all(ln.startswith("rm -f ") for ln in solution[:-1]), op.name
        assert "2.0.7" in op.offline_repair(fair) and "{" not in op.offline_repair(fair)
