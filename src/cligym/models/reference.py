"""The gold reference: what a task's verifier needs from the gold environment to judge a
repaired container without trusting anything the agent could have changed.

Gathered once per task from a container of the gold image (``cligym.harness.reference``),
shipped under the task's ``tests/`` (which a harness copies in only after the agent is
done), and read back by the verifier script written beside it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SystemState(BaseModel):
    """What the verifier of a Debian-world task compares besides the tests' own run, read off
    the gold's probe (``cligym.debian.state``): the fingerprint spec (``KIND PATH`` lines)
    and the shared objects and programs whose library resolution must be gold's."""

    spec: list[str]
    objects: list[str] = Field(default_factory=list)


class JunitKey(BaseModel):
    """How one node id appears in pytest's xunit1 report: its ``classname`` and ``name``
    attributes exactly as gold's pytest writes them (XML-escaped)."""

    node: str
    classname: str
    name: str


class GoldReference(BaseModel):
    """Everything that decides a task's verdict, taken from gold.

    ``spec`` lists what the fingerprint covers, one ``KIND PATH`` a line (the kinds
    are described in ``cligym/harness/scripts/fingerprint.sh``); ``fingerprint`` is that listing
    as gold gave it (sorted lines), made by the same shell code the verifier runs;
    ``pip_config`` is pip's configuration as that code's ``m_pipconf`` prints it in gold.
    """

    instance_id: str
    workdir: str
    test_command: str
    interpreter: str  # the absolute path the test command's interpreter resolves to in gold
    command_path: str  # what the test command's first word resolves to on gold's PATH
    rootdir: str
    inifile: str | None = None
    plugins: list[str] = Field(default_factory=list)  # gold's pytest11 entry point names
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    order: list[str]  # F2P + P2P in the order they run
    keys: list[JunitKey]
    pristine: list[str]  # files copied from gold (in pristine.tar), restored before the run
    foreign: list[str]  # where a conftest/config/__init__ file did not exist in gold
    conftests: list[str]  # every conftest.py below the rootdir in gold
    pycache_dirs: list[str] = Field(default_factory=list)  # (bundles before the fresh bytecode cache)
    shadow_dirs: dict[str, list[str]]  # folder on sys.path -> its entries in gold
    protected_modules: list[str]  # module names no new file in those folders may shadow
    spec: list[str]
    fingerprint: list[str]
    pybin: str = ""  # the gold interpreter's bin folder (console scripts' shebangs point there)
    project_files: list[str] = Field(default_factory=list)  # the workdir's listing in gold
    package_dirs: list[str] = Field(default_factory=list)  # workdir folders with an __init__.py
    loader: str = ""  # the dynamic loader the interpreter maps
    elf: list[str] = Field(default_factory=list)  # shared objects whose resolution is checked
    resolved: list[str] = Field(default_factory=list)  # how the loader resolved them in gold
    path_env: str = ""  # gold's PATH
    prefix: str = ""  # gold's sys.prefix (a venv's own pip.conf is there)
    pip_config: list[str] = Field(default_factory=list)  # pip's configuration as m_pipconf prints it
    #: the bytecode files gold's collection of the tests read, as m_bytecode prints them
    #: ("SHA256  PATH"): the verifier reuses a file that still holds those bytes
    bytecode: list[str] = Field(default_factory=list)
    keepalive: list[str] = Field(default_factory=list)  # sha256 of the programs PID 1 may run
    #: which verifier judges: a Python project's (pytest, the interpreter's state) or a Debian
    #: system's (the autopkgtest runner, the system's state); the fields a world does not use
    #: stay empty
    world: Literal["python", "debian"] = "python"
