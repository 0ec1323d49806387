"""Every operator, applied to a real gold image, broken and repaired: one table.

A row names an operator and a real project (a PyPI spec, or a local project of
``projects.LOCAL``); optionally a filter choosing among its targets, a function narrowing
the gold tests, and a check making further assertions on the result (``conftest.Broken``).
``check_operator`` itself asserts that some test fails and that the solution makes every
test pass again, in a container with no network. The solution of a default (offline-fair)
operator must carry no embedded payload. Every category needs at least one row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cligym.invert.operators import CATEGORIES, REGISTRY, Target

from .conftest import Broken, check_operator

DOTENV = "python-dotenv==1.2.1"
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
CERTIFI_TEST = "tests/test_certs.py::test_certifi_bundle_loads"
LOCALE_TESTS = "tests/test_locale.py::"
TEXT_TESTS = "tests/test_text.py::"
ZONE_TESTS = "tests/test_zones.py::"
ZONEINFO = "/usr/share/zoneinfo"


@dataclass(frozen=True)
class Row:
    operator: str
    project: str
    check: Callable[[Broken], None] | None = None
    target: Callable[[Target], bool] | None = None
    tests: Callable[[list[str]], list[str]] | None = None
    variant: str = ""
    slow: bool = False

    def param(self, slow: bool = False):
        name = self.operator + (f"-{self.variant}" if self.variant else "")
        return pytest.param(self, id=name, marks=[pytest.mark.slow] if self.slow or slow else [])


# ---- the extra checks ----------------------------------------------------------------

#: Embedded bytes in a solution: a long base64 run, or a pipe through ``base64 -d``.
PAYLOAD = re.compile(r"base64|[A-Za-z0-9+/]{120,}={0,2}")
WHEELHOUSE_REINSTALL = "-m pip install --quiet --no-index --find-links /opt/wheelhouse --force-reinstall --no-deps"


def no_payload(r: Broken) -> None:
    """The solution carries no bytes of the original (no base64 payload)."""
    assert not PAYLOAD.search(r.solution), r.solution[:300]


def reinstalled(r: Broken) -> None:
    """The repair works with only what is in the image: the solution has no embedded payload
    and reinstalls the distribution from the image's own wheelhouse with no index.
    ``check_operator`` ran it through ``repair_and_test`` in a container of the broken image,
    and every cligym container runs with ``network_mode="none"`` (``runtime``), so the
    tests passed again with no network at all."""
    no_payload(r)
    assert WHEELHOUSE_REINSTALL in r.solution, r.solution
    assert f"'{r.target.data.dist}=={r.target.data.version}'" in r.solution


def both(*checks: Callable[[Broken], None]) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        for one in checks:
            one(r)
    return check



def some_fail(r: Broken) -> None:
    assert 0 < len(r.failing) < len(r.gold.tests)


def all_fail(r: Broken) -> None:
    assert len(r.failing) == len(r.gold.tests)


def in_project(package: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert r.target.path.startswith(f"{r.gold.workdir}/{package}")
    return check


def installed(r: Broken) -> None:
    assert "/site-packages/" in r.target.path and not r.target.path.startswith(r.gold.workdir + "/")


def path_ends(suffix: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert r.target.path.endswith(suffix)
    return check


def first_line_has(text: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert text in r.lines[0]
    return check


def sets_env(variable: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert any(line.startswith(f"ENV {variable}=") for line in r.lines)
    return check


def fails_only(*tests: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert r.failing == list(tests)
    return check


def fails_with(test: str) -> Callable[[Broken], None]:
    def check(r: Broken) -> None:
        assert test in r.failing
    return check


def dotenv_script(r: Broken) -> None:
    """python-dotenv's command: only its CLI tests run it."""
    assert r.target.path == "/opt/venv/bin/dotenv"
    assert set(r.failing) <= set(r.gold.tests) and len(r.failing) < len(r.gold.tests)


def certifi_garbage(r: Broken) -> None:
    assert r.target.path.endswith("certifi/cacert.pem")  # the narrowest bundle
    assert r.failing == [CERTIFI_TEST]


def bundle_regenerated(r: Broken) -> None:
    """The system bundle comes back from update-ca-certificates, offline."""
    assert r.target.data.regenerate is True
    assert "tests/test_certs.py::test_system_bundle_lists_well_known_roots" in r.failing


def api_removed(r: Broken) -> None:
    assert r.target.path.startswith("/opt/venv/") and "/environs/" not in r.target.path
    assert "Version: " in r.lines[0]


def uninstalled(r: Broken) -> None:
    assert r.target.name in ("sh", "click")


def version_mismatch(r: Broken) -> None:
    assert r.target.path.endswith("/METADATA") and r.target.name == "marshmallow"


def retargeted(r: Broken) -> None:
    assert r.lines[0].startswith("RUN ln -sfn ")


def dangling(r: Broken) -> None:
    assert r.target.data.new != r.target.data.original


def pythonpath_shadow(r: Broken) -> None:
    sets_env("PYTHONPATH")(r)
    assert len(r.failing) < len(r.gold.tests)


def home_missing(r: Broken) -> None:
    assert r.lines == [f"ENV HOME={r.target.path}"]
    some_fail(r)


def home_tests(tests: list[str]) -> list[str]:
    # wcmatch's tilde tests list the home directory. Its full suite depends on test order
    # (glob cases share temporary trees), so run by sorted node ids some of it fails even
    # in gold: keep the tilde tests and the order-independent fnmatch ones.
    return [t for t in tests if "::TestTilde::" in t or t.startswith("tests/test_fnmatch.py")]


def pyvenv_cfg_removed(r: Broken) -> None:
    assert r.lines == ["RUN rm -f /opt/venv/pyvenv.cfg"]
    all_fail(r)


def charset_envtouch(r: Broken) -> None:
    assert r.lines[-1] == "ENV LANG=en_US.UTF-8"
    assert f"{TEXT_TESTS}test_read_shipped_notes" in r.failing
    assert f"{TEXT_TESTS}test_ascii_notes_round_trip" not in r.failing
    assert f"{TEXT_TESTS}test_read_shipped_notes" in r.target.touching


def charset_dotenv(r: Broken) -> None:
    """python-dotenv sets os.environ from a .env with non-ASCII text: in an ASCII locale
    the value cannot be encoded for the environment."""
    assert "tests/test_main.py::test_load_dotenv_string_io_utf_8" in r.failing
    assert set(r.failing) <= set(r.target.touching)


def separators_swapped(r: Broken) -> None:
    assert len([ln for ln in r.lines if ln.startswith("RUN")]) == 1
    assert f"{LOCALE_TESTS}test_decimal_point_is_a_dot" in r.failing
    assert f"{LOCALE_TESTS}test_amounts_round_trip" not in r.failing
    assert all(t.startswith(LOCALE_TESTS) for t in r.failing)


def not_generated(r: Broken) -> None:
    assert f"{LOCALE_TESTS}test_numeric_locale_follows_the_environment" in r.failing
    assert all(t.startswith(LOCALE_TESTS) for t in r.failing)


def entry_points_corrupted(r: Broken) -> None:
    assert set(r.failing) == set(r.gold.tests)  # pytest itself reads every entry point


def interpreter_not_executable(r: Broken) -> None:
    assert r.target.path == r.probe.python["realpath"]
    all_fail(r)


def stdlib_envtouch(r: Broken) -> None:
    assert r.target.path.startswith(r.probe.python["stdlib"]) and r.target.path.endswith(".py")
    assert len(r.target.touching) < len(r.gold.tests)
    assert len(r.failing) < len(r.gold.tests)


def stdlib_markupsafe(r: Broken) -> None:
    assert r.target.data.module.startswith("html")
    assert len(r.failing) < len(r.gold.tests)


def mime_mappings(r: Broken) -> None:
    assert "tests/test_mime.py::test_common_types" in r.failing


def mime_encoding(r: Broken) -> None:
    """h11's stdlib server reads the table only to type a file with no extension: the
    undecodable line breaks the request. The repair deletes the added lines."""
    assert r.failing == ["h11/tests/test_against_stdlib_http.py::test_h11_as_client"]
    assert re.fullmatch(r"sed -i '\d+,\d+d' /etc/mime\.types", r.solution.splitlines()[-1])


def zone_rebuilt(r: Broken) -> None:
    """The zone file comes back from the database's source, compiled by zic in the image."""
    assert f"zic -d /tmp/zoneinfo-rebuilt {ZONEINFO}/tzdata.zi" in r.solution


def os_release(r: Broken) -> None:
    assert r.target.path == r.probe.realpath("/etc/os-release")
    assert r.failing == ["tests/test_system.py::test_user_agent_names_the_os"]
    assert "sed -i " in r.solution


def venv_recreated(r: Broken) -> None:
    """pyvenv.cfg is written again by the venv command that made the environment."""
    pyvenv_cfg_removed(r)
    assert " -m venv /opt/venv" in r.solution


def warnings_error(r: Broken) -> None:
    assert r.target.path == f"{r.gold.workdir}/pytest.ini"
    some_fail(r)


def strict_markers(r: Broken) -> None:
    assert r.target.data.markers == ["fast"]
    assert r.target.touching == ["tests/test_markedproj.py::test_double"]


def conftest_chdir(r: Broken) -> None:
    assert r.target.path.endswith("/conftest.py")
    some_fail(r)


def zone_corrupted(r: Broken) -> None:
    assert r.target.path.startswith(f"{ZONEINFO}/")
    assert r.lines == [f"RUN : > {r.target.path}"]
    zone_rebuilt(r)
    assert set(r.failing) >= set(r.target.touching)
    assert all(t.startswith(ZONE_TESTS) for t in r.failing)


def zone_removed(r: Broken) -> None:
    assert r.lines == [f"RUN rm -f {r.target.path}"]
    zone_rebuilt(r)
    assert set(r.failing) >= set(r.target.touching)


def partial(r: Broken) -> None:
    """Some tests fail, not all, the targeted ones among them; the repair is the offline
    reinstall of the distribution."""
    assert 0 < len(r.failing) < len(r.gold.tests), f"{len(r.failing)} of {len(r.gold.tests)} failed"
    assert set(r.target.touching) <= set(r.failing) and len(r.target.touching) < len(r.gold.tests)
    assert r.target.data.reinstall in r.solution
    reinstalled(r)


def textwrap_removed(r: Broken) -> None:
    partial(r)
    assert r.target.name == "click._textwrap" and r.target.data.dist == "click"
    assert "__pycache__" in r.lines[0]
    assert all(t.startswith("tests/test_cli.py::") for t in r.failing)


def schema_removed(r: Broken) -> None:
    partial(r)
    assert r.target.data.dist == "openapi-spec-validator"
    assert "tests/test_ext_marshmallow_openapi.py::test_openapi_tools_validate_v2" in r.failing


def schema_truncated(r: Broken) -> None:
    partial(r)
    assert 0 < r.target.data.keep < r.target.data.size
    assert r.lines == [f"RUN truncate -s {r.target.data.keep} {r.target.path}"]


def localtime_relinked(r: Broken) -> None:
    assert r.target.data.original == r.probe.files["/etc/localtime"].link
    assert f"{ZONE_TESTS}test_local_zone_agrees_with_the_c_library" in r.failing
    assert all(t.startswith(ZONE_TESTS) for t in r.failing)


# ---- the table -------------------------------------------------------------------------

ROWS = [
    # bytecode
    # an installed module: the verifier restores the checkout's own bytecode caches
    Row("stale_pyc_unchecked", DOTENV, installed),
    Row("sourceless_pyc_stale", "environs==15.2.0", both(path_ends(".py"), reinstalled)),
    # certificates
    Row("ca_bundle_garbage", "envtouch", certifi_garbage),
    Row("ca_bundle_garbage", "envtouch", fails_with("tests/test_certs.py::test_system_trust_store_has_roots"),
        target=lambda t: t.path == SYSTEM_BUNDLE, variant="system_bundle"),
    Row("ca_bundle_emptied", "envtouch", both(fails_only(CERTIFI_TEST), reinstalled)),
    Row("ca_bundle_emptied", "envtouch", bundle_regenerated,
        target=lambda t: t.path == SYSTEM_BUNDLE, variant="system_bundle_regenerated"),
    # code
    Row("code_comparison_flipped", "markupsafe==3.0.2", first_line_has("s/ == / != /")),
    Row("code_return_flipped", "h11==0.16.0", in_project("h11/")),
    Row("code_boundary_shifted", "apispec==6.10.1", first_line_has("s/ < / <= /")),
    # dependency_versions
    Row("dependency_api_removed", "environs==15.2.0", both(api_removed, reinstalled)),
    Row("dependency_uninstalled", DOTENV, both(uninstalled, reinstalled)),
    Row("dependency_version_mismatch", "apispec==6.10.1", both(version_mismatch, reinstalled)),
    # dynamic_linking
    Row("elf_magic_corrupt", DOTENV, first_line_has("conv=notrunc")),
    Row("lib_symlink_retarget", DOTENV, retargeted),
    Row("lib_symlink_dangling", DOTENV, dangling),
    Row("ld_library_path_shadow", DOTENV, sets_env("LD_LIBRARY_PATH")),
    # markupsafe's tests skip the speedups they cannot import: skipped tests count as failing
    Row("extension_module_removed", "markupsafe==3.0.2", both(path_ends(".so"), reinstalled)),
    # environment_variables
    Row("env_pythonpath_shadow", "markupsafe==3.0.2", pythonpath_shadow),
    Row("env_home_missing", "wcmatch==12.0.1", home_missing, tests=home_tests, slow=True),
    Row("env_pythonhome_wrong", "markupsafe==3.0.2", all_fail),
    # import_system
    Row("cwd_shadow_module", "h11==0.16.0", in_project("")),
    Row("pth_shadow_path", DOTENV, path_ends(".pth")),
    Row("import_blocker", "markupsafe==3.0.2"),
    Row("init_py_removed", "apispec==6.10.1", both(path_ends("/__init__.py"), reinstalled)),
    # interpreter_venv
    Row("pyvenv_cfg_removed", "markupsafe==3.0.2", venv_recreated),
    Row("venv_python_symlink_broken", "markupsafe==3.0.2", all_fail),
    Row("console_script_shebang_wrong", DOTENV, both(dotenv_script, reinstalled)),
    # locale_encoding
    Row("locale_charset_mislabeled", "envtouch", charset_envtouch),
    Row("locale_separators_swapped", "envtouch", separators_swapped),
    Row("locale_not_generated", "envtouch", not_generated),
    Row("locale_charset_mislabeled", DOTENV, charset_dotenv, variant="python_dotenv"),
    # package_metadata
    Row("dist_info_removed", "apispec==6.10.1", both(path_ends(".dist-info"), reinstalled)),
    Row("entry_points_corrupted", DOTENV, both(entry_points_corrupted, reinstalled)),
    Row("console_script_broken", DOTENV, both(dotenv_script, reinstalled)),
    # package_files: python-dotenv's CLI tests wrap help text with click's lazily imported
    # click._textwrap; apispec's OpenAPI validation tests load openapi-spec-validator's JSON
    # schemas, one per OpenAPI version, on first use
    Row("package_submodule_removed", DOTENV, textwrap_removed),
    Row("package_data_removed", "apispec==6.10.1", schema_removed, target=lambda t: "/v2.0/" in t.path),
    Row("package_data_truncated", "apispec==6.10.1", schema_truncated, target=lambda t: "/v2.0/" in t.path),
    # filesystem_permissions
    Row("console_script_not_executable", DOTENV, dotenv_script),
    Row("interpreter_not_executable", "markupsafe==3.0.2", interpreter_not_executable),
    # system_files
    Row("stdlib_module_corrupted", "envtouch", stdlib_envtouch),
    Row("stdlib_module_corrupted", "markupsafe==3.0.2", stdlib_markupsafe, variant="markupsafe"),
    Row("mime_types_shifted", "envtouch", mime_mappings),
    Row("mime_types_corrupted", "envtouch", fails_with("tests/test_mime.py::test_common_types")),
    Row("mime_types_corrupted", "h11==0.16.0", mime_encoding, variant="h11"),
    Row("os_release_corrupted", "envtouch", os_release),
    # test_configuration
    Row("pytest_ini_warnings_error", DOTENV, warnings_error),
    Row("pytest_ini_strict_markers", "markedproj", strict_markers),
    Row("conftest_autouse_chdir", "environs==15.2.0", conftest_chdir),
    # time_zone_data
    Row("zoneinfo_corrupted", "envtouch", zone_corrupted),
    Row("zoneinfo_removed", "envtouch", zone_removed),
    Row("localtime_relinked", "envtouch", localtime_relinked),
]


def _params() -> list:
    """Every row; the default run keeps the first of each category (the unit tier checks
    every operator's plan, ``-m slow`` runs the rest of the table)."""
    shown: set[str] = set()
    params = []
    for row in ROWS:
        category = REGISTRY[row.operator].category
        params.append(row.param(slow=category in shown))
        if not row.slow:
            shown.add(category)
    return params


@pytest.mark.parametrize("row", _params())
def test_operator(runtime, probed, row: Row):
    gold, probe = probed(row.project)
    if row.tests:
        gold = gold.model_copy(update={"tests": row.tests(list(gold.tests))})
    result = check_operator(runtime, gold, probe, row.operator, target_filter=row.target)
    if REGISTRY[row.operator].default:
        no_payload(result)  # offline-fair: the repair uses only what is in the image
    if row.check:
        row.check(result)


def test_table_covers_every_category():
    """A new category module needs its rows here; every row names a registered operator."""
    assert {row.operator for row in ROWS} <= set(REGISTRY)
    assert {REGISTRY[row.operator].category for row in ROWS} == set(CATEGORIES)
    ids = [row.param().id for row in ROWS]
    assert len(ids) == len(set(ids))
