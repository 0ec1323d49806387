"""Scenarios: Python packaging incidents, where the obvious repair (reinstall the
distribution with pip) is itself blocked until something else is found."""

from __future__ import annotations

import re

from cligym.invert.operators.targets import q, write_file_line
from cligym.invert.scenarios.base import (
    Plan,
    PlannedChange,
    Scenario,
    Site,
    Submodule,
    missing_code,
    module_cut,
    module_gone,
    record_gone,
    register,
)
from cligym.models.task import RepairStep

PIP_CONF = "/etc/pip.conf"


def pip(site: Site) -> str:
    return f"{site.prefix}/bin/python -m pip"


def plain_reinstall(site: Site, sub: Submodule, pinned: bool = True) -> RepairStep:
    """The reinstall a user types first: pip as configured (no --find-links of one's own)."""
    spec = f"{sub.dist}=={sub.version}" if pinned else sub.dist
    return RepairStep(label="naive", lines=[f"{pip(site)} install --force-reinstall --no-deps {q(spec)}"])


def next_version(version: str) -> str:
    """A release after ``version`` (its last number bumped)."""
    m = re.match(r"^(.*?)(\d+)([^\d]*)$", version)
    return f"{m[1]}{int(m[2]) + 1}" if m else f"{version}.post1"


@register
class HalfFinishedUpgrade(Scenario):
    """An upgrade of one distribution interrupted half-way: one module was being rewritten
    (cut short), the old ``RECORD`` was already removed (so pip refuses to uninstall), and
    the new release's wheel in the local wheelhouse is a partial download (so an unpinned
    reinstall picks it and fails). ``pip install --force-reinstall`` fails twice before
    it works."""

    name = "half_finished_upgrade"
    family = "interrupted_pip"
    resists = ("executables", "loader", "bytecode", "stdlib_names", "clean_environment", "system_data")
    shows_cause = True  # the truncated module's SyntaxError prints its path
    incident = "an interrupted upgrade: a truncated module, a missing RECORD, a partial wheel in the wheelhouse"

    def plan(self, site, rng):
        sub = site.pick(rng, need_size=64)
        size = site.probe.files[sub.wheel].size if sub and sub.wheel in site.probe.files else 0
        if sub is None or size < 64:
            return None
        folder, file = sub.wheel.rsplit("/", 1)
        partial = f"{folder}/{file.replace('-' + sub.version + '-', '-' + next_version(sub.version) + '-', 1)}"
        if partial == sub.wheel or site.exists(partial):
            return None
        wheel = PlannedChange(
            name="partial_wheel", category="package_metadata", role="blocker",
            dockerfile=[f"RUN head -c {size // 2} {q(sub.wheel)} > {q(partial)}"], repair=[f"rm -f {q(partial)}"],
            places=[partial], symptom=f"pip reports the wheel of {sub.dist} in the local wheelhouse as invalid.",
            hint="The files in the local wheelhouse pip installs from.",
            offline="Delete the partial wheel; the wheelhouse still holds the installed release's wheel.")
        changes = [module_cut(sub), record_gone(sub), wheel]
        return Plan(scenario=self.name, changes=changes, repair_order=[2, 1, 0],
                    naive=[plain_reinstall(site, sub, pinned=False)], touching=sub.touching)


@register
class ConstraintPinsMissingRelease(Scenario):
    """A constraints file written for a coming rollout, wired into the machine-wide pip
    configuration: it pins a distribution to a release the wheelhouse does not have, so
    every reinstall of it — by name or by wheel file — is refused as a conflict, while
    code of it is missing (a function or a whole module, ``missing_code``)."""

    name = "constraint_pins_missing_release"
    family = "pip_configuration"
    incident = "a constraint file in pip's configuration pinning a release that is not available"

    def plan(self, site, rng):
        sub = site.pick(rng)
        original = site.files.read(PIP_CONF)
        if sub is None or original is None or b"constraint" in original:
            return None
        constraints = "/etc/pip/constraints.txt"
        pins = f"# release train 2: pinned ahead of the rollout\n{sub.dist}=={next_version(sub.version)}\n"
        config = original.rstrip(b"\n") + f"\nconstraint = {constraints}\n".encode()
        pin = PlannedChange(
            name="constraint_pin", category="package_metadata", role="blocker",
            dockerfile=[f"RUN {write_file_line(constraints, pins.encode(), '644')} && "
                        f"{write_file_line(PIP_CONF, config, '644')}"],
            repair=[write_file_line(PIP_CONF, original, "644"), f"rm -f {q(constraints)}"],
            places=[constraints, PIP_CONF],
            symptom=f"pip refuses to install {sub.dist} {sub.version}: the requirements conflict.",
            hint="What pip's configuration adds to every install.",
            offline="Take the constraint out of pip's configuration, then reinstall from the local wheelhouse.")
        return Plan(scenario=self.name, changes=[missing_code(site, sub, rng), pin], repair_order=[1, 0],
                    naive=[plain_reinstall(site, sub)], touching=sub.touching)


class _PipInstallSetting(Scenario):
    """A setting in the machine-wide pip configuration's ``[install]`` section that defeats
    every reinstall, over code missing from an installed distribution (``missing_code``)."""

    family = "pip_configuration"
    #: the change's name, the lines of the ``[install]`` section, what the naive repair shows
    change: str
    setting: str
    symptom: str

    def lines(self, rng) -> str:
        return self.setting

    def plan(self, site, rng):
        sub = site.pick(rng)
        original = site.files.read(PIP_CONF)
        if sub is None or original is None or b"[install]" in original:
            return None
        config = original.rstrip(b"\n") + f"\n\n[install]\n{self.lines(rng)}".encode()
        setting = PlannedChange(
            name=self.change, category="package_metadata", role="blocker",
            dockerfile=[f"RUN {write_file_line(PIP_CONF, config, '644')}"],
            repair=[write_file_line(PIP_CONF, original, "644")], places=[PIP_CONF],
            symptom=self.symptom.format(dist=sub.dist), hint="What pip's configuration adds to every install.",
            offline="Take the [install] setting out of pip's configuration, then reinstall from the local wheelhouse.")
        return Plan(scenario=self.name, changes=[missing_code(site, sub, rng), setting], repair_order=[1, 0],
                    naive=[plain_reinstall(site, sub)], touching=sub.touching)


@register
class BuildStagePipTarget(_PipInstallSetting):
    """A multi-stage image build set ``target`` in the machine-wide pip configuration so
    that a build stage could install into a folder it copied later; the setting stayed
    in the final image. Every ``pip install`` since "succeeds" into that folder, which no
    interpreter searches, so reinstalling the distribution whose code is missing changes
    nothing — nor does reinstalling everything."""

    name = "build_stage_pip_target"
    incident = "a pip 'target' setting left in the global pip configuration by a build stage"
    change = "pip_install_target"
    symptom = "Reinstalling {dist} reports success, yet the tests still fail the same way."

    def lines(self, rng) -> str:
        folder = rng.choice(["/opt/build/pydeps", "/usr/local/share/app-build/site", "/srv/build/python-deps"])
        return f"# build stage: collect dependencies for the runtime layer\ntarget = {folder}\n"


@register
class SystemPipUserInstall(_PipInstallSetting):
    """An image that once ran its tools on the system Python (whose site-packages Debian
    marks as externally managed) set ``user = true`` in the machine-wide pip configuration;
    after the move to a virtual environment the setting stayed, and pip refuses every
    install inside the venv ("Can not perform a '--user' install") while code of an
    installed distribution is missing."""

    name = "system_pip_user_install"
    incident = "a 'user = true' pip setting from the system-Python days that refuses every install in the venv"
    change = "pip_user_install"
    setting = "# installs go to ~/.local: the system site-packages is externally managed\nuser = true\n"
    symptom = "pip refuses to reinstall {dist}: it cannot perform a --user install in the virtual environment."


@register
class InterruptedUninstall(Scenario):
    """``pip uninstall`` killed after it deleted the package's files and its ``RECORD`` but
    before it removed the metadata folder: pip still lists the distribution (``pip
    install`` answers "already satisfied"), and a forced reinstall cannot uninstall first
    ("RECORD file not found")."""

    name = "interrupted_uninstall"
    family = "interrupted_pip"
    resists = ("executables", "loader", "bytecode", "stdlib_names", "clean_environment", "system_data")
    incident = "an interrupted pip uninstall: the package's files gone, its metadata left without a RECORD"

    def plan(self, site, rng):
        sub = site.pick(rng)
        if sub is None:
            return None
        users = site.probe.touching(site.tests, "modules", sub.top)
        if len(users) * 2 > len(site.tests):
            return None
        gone = PlannedChange(
            name="package_files_gone", category="package_files", dockerfile=[f"RUN rm -rf {q(sub.package)}"],
            repair=[sub.reinstall], places=[sub.package],
            symptom=f"Tests importing {sub.top} fail with ModuleNotFoundError, while pip lists {sub.dist} as "
                    "installed.",
            hint=f"What is left of {sub.dist} in site-packages.",
            offline=f"Reinstall {sub.dist}=={sub.version} from the local wheelhouse once pip can.")
        return Plan(scenario=self.name, changes=[gone, record_gone(sub)], repair_order=[1, 0],
                    naive=[plain_reinstall(site, sub)], touching=users)


@register
class MirrorSwitch(Scenario):
    """A virtual environment's own ``pip.conf`` (which overrides the machine's) pointing
    at a new wheel mirror folder that was never filled, left by a half-done migration;
    meanwhile one module of a distribution is cut short."""

    name = "mirror_switch"
    family = "pip_configuration"
    resists = ("executables", "loader", "bytecode", "stdlib_names", "clean_environment", "pip_config_ignored",
               "system_data")
    shows_cause = True  # the truncated module's SyntaxError prints its path
    incident = "a venv-level pip.conf pointing at an empty wheelhouse, over a damaged module"

    def plan(self, site, rng):
        sub = site.pick(rng, need_size=64)
        conf = f"{site.prefix}/pip.conf"
        if sub is None or site.exists(conf):
            return None
        empty = "/srv/wheels/next"
        text = f"[global]\nno-index = true\nfind-links = {empty}\n".encode()
        mirror = PlannedChange(
            name="venv_pip_conf", category="interpreter_venv", role="blocker",
            dockerfile=[f"RUN mkdir -p {empty} && {write_file_line(conf, text, '644')}"],
            repair=[f"rm -f {q(conf)}"], places=[conf],
            symptom=f"pip finds no distribution of {sub.dist} to install.",
            hint="Which pip configuration files apply inside the virtual environment.",
            offline="Delete the virtual environment's pip.conf; the machine's configuration names the wheelhouse.")
        return Plan(scenario=self.name, changes=[module_cut(sub), mirror], repair_order=[1, 0],
                    naive=[plain_reinstall(site, sub)], touching=sub.touching)


GHOST_METADATA = "Metadata-Version: 2.1\nName: {name}\nVersion: 0.4.2\n"


@register
class GhostPlugin(Scenario):
    """A pytest plugin uninstalled by deleting its module by hand: its metadata still
    registers a ``pytest11`` entry point, so pytest fails to start; behind it, the same
    clean-up took a submodule of a real distribution."""

    name = "ghost_plugin"
    family = "interrupted_pip"
    resists = ("executables", "loader", "bytecode", "stdlib_names", "clean_environment", "system_data")
    incident = "a ghost pytest plugin left by an uninstall, over a module removed by the same clean-up"

    def plan(self, site, rng):
        sub = site.pick(rng)
        if sub is None:
            return None
        plugin = f"pytest_{sub.top}_compat"
        info = f"{site.site}/{plugin}-0.4.2.dist-info"
        if site.exists(info):
            return None
        files = {f"{info}/METADATA": GHOST_METADATA.format(name=plugin.replace("_", "-")),
                 f"{info}/entry_points.txt": f"[pytest11]\n{plugin} = {plugin}.plugin\n",
                 f"{info}/top_level.txt": f"{plugin}\n"}
        ghost = PlannedChange(
            name="ghost_plugin", category="test_configuration",
            dockerfile=[f"RUN {' && '.join(write_file_line(p, t.encode(), '644') for p, t in files.items())}"],
            repair=[f"rm -rf {q(info)}"], places=[info],
            symptom="pytest stops before running any test: a plugin it loads cannot be imported.",
            hint="Which pytest plugins are registered in the environment, and by what.",
            offline="Delete the metadata folder that still registers the removed plugin.")
        return Plan(scenario=self.name, changes=[ghost, module_gone(sub)], repair_order=[0, 1],
                    touching=sorted(set(site.tests)))
