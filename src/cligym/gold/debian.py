"""A gold environment from a Debian source package (``cligym gold deb:SOURCE[=VERSION]``).

On the host, with cligym's private apt state (``cligym.debian.archive``): the source
package is fetched and unpacked, its autopkgtest tests read (``cligym.debian.control``),
and the binary packages they need are downloaded for the base image's dpkg status. The
image is built FROM the shared base image, offline: the debs become a flat apt repository
in the image, the only one its apt knows (an air-gapped machine set up from it:
``apt-get install --reinstall P`` works with no network), the tests' packages are installed
from it with their Recommends (apt's default, which autopkgtest's testbeds keep: a test
that compiles names cmake, not the make it recommends), and the source tree is the work
directory. The suite is run by cligym's runner
(``debtest.sh``, the test command), ``--runs`` times, as for a Python project.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from cligym.config import DebianImage, LABEL, exclusive, home
from cligym.debian.archive import AptState
from cligym.debian.control import read_tests, write_tests_tsv
from cligym.debian.results import CONVERTERS, COMMON
from cligym.errors import BadInput, GoldFailed
from cligym.gold.image import PROFILE_SCRIPT, PROFILE_SOURCE, build_tagged, python_version, write_profile_script
from cligym.gold.suite import record_suite
from cligym.harness.bundle import busybox_bytes
from cligym.models.debian_tests import DebianTests
from cligym.models.gold import GoldEnv, Source
from cligym.runtime import Runtime, ensure_base_image
from cligym.ui import Reporter

PREFIX = "deb:"
#: What every autopkgtest testbed has beside the tests' dependencies: autopkgtest unpacks
#: the source in the testbed with dpkg-source, so test runners may use dpkg-dev's tools
#: (gem2deb-test-runner reads the changelog with dpkg-parsechangelog).
TESTBED = ("dpkg-dev",)
PYTHON = "/usr/bin/python3"  # the base image's: cligym's in-container readers run with it
#: Where in the image's repository the base image's own debs are (``base_repository``).
BASE_FOLDER = "base"

DOCKERFILE = """\
# gold environment of the Debian source package {source} {version}, built offline
FROM {base}
COPY apt-base {repo}/{base_folder}
LABEL {label}=1 {label}.project={name} {label}.version={version}
COPY apt {repo}
RUN rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* \\
 && echo "deb [trusted=yes] file:{repo} ./" > /etc/apt/sources.list.d/local.list \\
 && apt-get update -q \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --install-recommends {packages} \\
 && apt-get clean
COPY runner {runner}
COPY {profile_source} {profile_script}
COPY source {workdir}
WORKDIR {workdir}
ENV DEBTEST_AWK="{runner}/busybox awk"
"""


def is_debian_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse_debian_spec(spec: str) -> tuple[str, str | None]:
    """``deb:SOURCE[=VERSION]`` -> (source, version or None); BadInput when malformed."""
    body = spec.removeprefix(PREFIX)
    source, _, version = body.partition("=")
    if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", source) or (version and not re.fullmatch(r"[\w.+~:-]+", version)):
        raise BadInput(f"{spec}: a Debian source is deb:SOURCE or deb:SOURCE=VERSION (e.g. deb:json-c)")
    return source, version or None


def debian_gold(runtime: Runtime, spec: str, *, base_image: str, runs: int, timeout: float, rebuild: bool,
                reporter: Reporter) -> GoldEnv:
    """Fetch, build and record the gold environment of a Debian source package."""
    source, version = parse_debian_spec(spec)
    state = AptState()
    root = home() / "build"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        context = Path(tmp) / "context"
        context.mkdir()
        with reporter.task(f"fetching the Debian source package {source}{'=' + version if version else ''}"):
            fetched = state.fetch_source(source, version, dest=Path(tmp) / "src")
        tests = read_tests(Path(fetched.tree))
        packages = install_list(tests)
        base_id = ensure_base_image(runtime, base_image)
        with reporter.task(f"downloading {len(packages)} packages and what they need"):
            status = Path(tmp) / "status"
            status.write_bytes(_dpkg_status(runtime, base_image))
            debs = state.download_debs(_names(packages), status, dest=context / "apt", recommends=True)
            shutil.copytree(base_repository(state, status, base_id), context / "apt-base", copy_function=os.link)
            _write_packages_index(context / "apt", before=(context / "apt-base" / "Packages").read_text())
        workdir = f"/usr/src/{source}"
        _write_runner(context / "runner", tests)
        write_profile_script(context)  # login shells keep the PATH they are given (cligym.gold.image)
        shutil.copytree(fetched.tree, context / "source", symlinks=True)
        (context / "Dockerfile").write_text(DOCKERFILE.format(
            source=source, name=source, version=fetched.version, base=base_image, label=LABEL,
            repo=DebianImage.APT_REPO, base_folder=BASE_FOLDER, packages=" ".join(_names(packages)),
            runner=DebianImage.RUNNER, workdir=workdir, profile_source=PROFILE_SOURCE,
            profile_script=PROFILE_SCRIPT))
        (context / ".base-image-id").write_text(base_id)
        with reporter.task(f"building the gold image ({len(debs)} debs)"):
            started = time.monotonic()
            tag = build_tagged(runtime, context, f"deb-{source}", fetched.version, nocache=rebuild)
            build_seconds = round(time.monotonic() - started, 1)
    gold = GoldEnv(
        source=Source(kind="debian", spec=f"{PREFIX}{source}={fetched.version}", name=source, version=fetched.version),
        image=tag, image_id=runtime.image_id(tag), base_image=base_image, python=PYTHON,
        python_version=python_version(runtime, tag, PYTHON), workdir=workdir, test_command=DebianImage.DEBTEST,
        requirements=_names(packages), runs=0, tests=[], build_seconds=build_seconds,
    )
    record_suite(runtime, gold, [], runs, timeout, reporter)
    return gold


def install_list(tests: DebianTests) -> list[str]:
    """What the runnable tests need installed (each dependency's first applicable
    alternative), in order, once each; GoldFailed when no test can run here."""
    runnable = tests.runnable()
    if not runnable:
        why = "; ".join(sorted({f"{t.name}: {t.why_not}" for t in tests.tests})) or "it declares none"
        raise GoldFailed(f"{tests.source}: no autopkgtest test cligym can run ({why[:300]})")
    return list(dict.fromkeys([*TESTBED, *(spec for test in runnable for spec in test.install_list())]))


def _names(specs: list[str]) -> list[str]:
    """Package names as apt-get install takes them (a version relation dropped: the
    archive's candidate is what was downloaded)."""
    return list(dict.fromkeys(spec.split(" ", 1)[0] for spec in specs))


def _dpkg_status(runtime: Runtime, base_image: str) -> bytes:
    """The base image's dpkg status, copied out as bytes (not read from a log)."""
    result = runtime.run(base_image, ["true"], timeout=120, fetch=[DebianImage.DPKG_STATUS])
    status = result.files.get(DebianImage.DPKG_STATUS)
    if not result.ok or not status:
        raise GoldFailed(f"cannot read the dpkg status of {base_image}: {result.output.strip()[-200:]}")
    return status


def base_repository(state: AptState, status: Path, base_id: str) -> Path:
    """The debs of every package the base image has installed, at its version, with their
    ``Packages`` index (paths under ``BASE_FOLDER``): downloaded once per base image and
    kept in cligym's cache. Every gold of that base copies the same files first, so their
    layer is one, shared; and every package of a gold, the base's too, can be reinstalled
    offline."""
    folder = home() / "debian-base" / base_id.replace(":", "-")
    with exclusive(folder.parent / f"{folder.name}.lock"):
        if not (folder / "Packages").is_file():
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            state.download_installed(status, dest=partial)
            _write_packages_index(partial, prefix=BASE_FOLDER)
            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)
    return folder


def _write_packages_index(repo: Path, *, prefix: str = ".", before: str = "") -> None:
    """The flat repository's ``Packages`` index (``dpkg-scanpackages`` reads the debs'
    control files; nothing of them runs), each file named under ``prefix``, after the
    stanzas ``before`` (the base's: a package both hold at two versions is read at the
    gold's, the one it installed)."""
    proc = subprocess.run(["dpkg-scanpackages", "--multiversion", ".", "/dev/null"], cwd=repo, capture_output=True,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise GoldFailed(f"dpkg-scanpackages failed: {proc.stderr.strip()[-300:]}")
    stanzas = proc.stdout if prefix == "." else proc.stdout.replace("\nFilename: ./", f"\nFilename: {prefix}/")
    (repo / "Packages").write_text(before.rstrip("\n") + "\n\n" + stanzas if before.strip() else stanzas)
    for leftover in ("partial", "lock"):
        path = repo / leftover
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _write_runner(folder: Path, tests: DebianTests) -> None:
    """The runner, its converters, the static busybox whose awk runs them, the tests list."""
    from cligym.debian.results import script_text  # the package data of the runner

    (folder / "junit").mkdir(parents=True)
    (folder / "debtest.sh").write_text(script_text("debtest.sh"))
    (folder / "debtest.sh").chmod(0o755)
    for name in {COMMON, *CONVERTERS.values()}:
        (folder / "junit" / name).write_text(script_text(name))
    (folder / "busybox").write_bytes(busybox_bytes())
    (folder / "busybox").chmod(0o755)
    write_tests_tsv(tests, folder / "tests.tsv")
