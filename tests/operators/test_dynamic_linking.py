"""dynamic_linking operators, each applied to a real gold image, broken and repaired."""

from tests.operators.conftest import check_operator

DOTENV = "python-dotenv==1.2.1"


def test_elf_magic_corrupt(runtime, probed):
    gold, probe = probed(DOTENV)
    result = check_operator(runtime, gold, probe, "elf_magic_corrupt")
    assert "conv=notrunc" in result["lines"][0]


def test_lib_symlink_retarget(runtime, probed):
    gold, probe = probed(DOTENV)
    result = check_operator(runtime, gold, probe, "lib_symlink_retarget")
    assert result["lines"][0].startswith("RUN ln -sfn ")


def test_lib_symlink_dangling(runtime, probed):
    gold, probe = probed(DOTENV)
    result = check_operator(runtime, gold, probe, "lib_symlink_dangling")
    assert result["target"].data["new"] != result["target"].data["original"]


def test_ld_library_path_shadow(runtime, probed):
    gold, probe = probed(DOTENV)
    result = check_operator(runtime, gold, probe, "ld_library_path_shadow")
    assert any(line.startswith("ENV LD_LIBRARY_PATH=") for line in result["lines"])


def test_extension_module_removed(runtime, probed):
    gold, probe = probed(DOTENV)
    result = check_operator(runtime, gold, probe, "extension_module_removed")
    assert result["target"].path.endswith(".so")
