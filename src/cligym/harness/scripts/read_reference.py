"""Read, in a container of the gold image and with gold's own interpreter, what decides a
task's verdict (run by cligym.harness.reference; never imported by cligym).

Input: a JSON file (the only argument) with ``interpreter``, ``rootdir``, ``inifile``,
``ids``, ``workdir``, ``out``. It collects the listed tests in-process, the way the test
command would, with a finder at the end of ``sys.meta_path`` that records every module
name nothing provided; then it writes one JSON object to ``out``: the fingerprint's spec
(``KIND PATH`` lines, see fingerprint.sh), the pristine and foreign test files, the shared
objects the process maps, the extension modules whose resolution the loader must repeat,
the module names the tests import or looked for, gold's keep-alive programs, the JUnit
key of each id and the bytecode files (in __pycache__ folders) the collection read.
"""

import sys


class Missed:
    """The last finder on sys.meta_path: reached only when no other finder had the name.
    Installed before anything else this script imports."""

    names = set()

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        cls.names.add(name)
        return None


sys.meta_path.append(Missed)

import hashlib  # noqa: E402
import importlib.metadata as md  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import site  # noqa: E402
import sysconfig  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
args = json.load(open(sys.argv[1]))
root = args["rootdir"].rstrip("/") or "/"
workdir = os.path.realpath(args["workdir"])
canon = lambda n: re.sub(r"[-_.]+", "-", n or "").lower()  # noqa: E731
norm = os.path.normpath


def chain(path):
    seen = []
    while path and path not in seen and len(seen) < 40:
        seen.append(path)
        if not os.path.islink(path):
            break
        link = os.readlink(path)
        path = norm(link if link.startswith("/") else os.path.join(os.path.dirname(path), link))
    return seen


class Seen:
    """A plugin that keeps sys.path as the collected tests see it (pytest's ``pythonpath``
    option and its rootdir insertions included: the first is undone at exit)."""

    path = ()  # type: tuple[str, ...]

    def pytest_collection_finish(self, session):
        Seen.path = tuple(sys.path)


def collect():
    """Import what the tests import, as the test command would (its cwd first on sys.path)."""
    import pytest

    sys.path.insert(0, workdir)
    argv = ["--collect-only", "-q", "-p", "no:cacheprovider", f"--rootdir={root}", *args["ids"]]
    if args.get("inifile"):
        argv[4:4] = ["-c", args["inifile"]]
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1), os.dup2(null, 2)
    try:
        pytest.main(argv, plugins=[Seen()])
    except BaseException:  # noqa: BLE001 - a collection that exits or fails still leaves the ids it saw
        pass
    finally:
        sys.stdout.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
    sys.path.remove(workdir)


def mapped():
    out = []
    for line in open("/proc/self/maps"):
        part = line.split()[-1]
        if part.startswith("/") and not part.startswith(("/proc/", "/dev/", "/tmp/")) and part not in out:
            out.append(part)
    return out


def top(name):
    return name.split(".")[0]


def entries(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


collect()
files, trees, hooks, sites, libdirs = set(), set(), set(), set(), set()
bins = {norm(d) for d in os.environ.get("PATH", "").split(":") if d.startswith("/")}
interp = args["interpreter"]
pybin = os.path.dirname(interp)
files.update(chain(interp))
real_exe = os.path.realpath(sys.executable)
files.add(real_exe)


def same_bytes(path, other):
    if os.path.getsize(path) != os.path.getsize(other):
        return False
    with open(path, "rb") as a, open(other, "rb") as b:
        return hashlib.sha256(a.read()).digest() == hashlib.sha256(b.read()).digest()


# gold's interpreters: the names in its bin folder that are the interpreter binary (a link
# to it or a copy of it), whatever they are called; a console script whose first line names
# one of them runs gold's interpreter (fingerprint.sh's I entries)
interps = {os.path.join(pybin, n) for n in entries(pybin) if os.path.isfile(os.path.join(pybin, n))
           and (os.path.realpath(os.path.join(pybin, n)) == real_exe or same_bytes(os.path.join(pybin, n), real_exe))}
files.update(interps)
venv_cfg = os.path.join(sys.prefix, "pyvenv.cfg")
files.add("/etc/ld.so.preload")
stdlib = norm(sysconfig.get_paths()["stdlib"])
trees.add(stdlib)
for entry in sys.path:
    if entry and not os.path.exists(entry):
        files.add(norm(entry))
    elif entry and os.path.isdir(entry):
        hooks.add(norm(entry))
sites.update(norm(p) for p in site.getsitepackages() if os.path.isdir(p))
files.update(norm(p) for p in site.getsitepackages() if not os.path.isdir(p))
user = norm(site.getusersitepackages())
(sites if os.path.isdir(user) else files).add(user)
hooks -= sites

loader, elf = "", []
for path in mapped():
    files.update(chain(path))
    real = os.path.realpath(path)
    if re.search(r"/ld-linux[^/]*\.so|/ld-[^/]*\.so", real):
        loader = path
    elif ".so" in os.path.basename(real) and not real.startswith((stdlib + "/", *(s + "/" for s in sites))):
        libdirs.add(os.path.dirname(real))
        libdirs.add(os.path.dirname(path))
if os.path.isdir("/usr/local/lib"):
    libdirs.add("/usr/local/lib")
# what the kernel and the dynamic loader load besides (read_loader.py: the program loader
# every PT_INTERP names and the links on its way, where the loader searches, what decides it)
places = args.get("loader_places") or {}
files.update(places.get("files", []))
trees.update(places.get("trees", []))
libdirs.update(places.get("libdirs", []))
bins.add(pybin)
for folder in [stdlib, *sorted(sites)]:
    skip = ("__pycache__",) if folder in sites else ("__pycache__", "site-packages", "dist-packages")
    for here, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in skip]
        elf.extend(os.path.join(here, n) for n in sorted(names)
                   if re.search(r"\.so(\.|$)", n) and not os.path.islink(os.path.join(here, n)))
elf = [os.path.realpath(sys.executable), *sorted(elf)]

bin_folders = {os.path.realpath(b) for b in bins}
for dist in md.distributions():
    base = norm(str(dist.locate_file("")))
    for f in dist.files or []:
        path = norm(str(dist.locate_file(f)))
        if "__pycache__" in path.split("/") or not os.path.relpath(path, base).startswith(".."):
            continue
        if os.path.realpath(os.path.dirname(path)) not in bin_folders:  # a P entry lists it by what it runs
            files.add(path)

# where the interpreter's start-up looks for another prefix than gold's (a venv marker, a
# source build's landmarks, a ._pth file, a standard library below the executable)
version = "python%d.%d" % sys.version_info[:2]
for folder in {pybin, os.path.dirname(os.path.realpath(sys.executable))}:
    parent = os.path.dirname(folder)
    for rel in ("pyvenv.cfg", "pybuilddir.txt", "Modules", "Lib", "lib", "lib64", f"{version}._pth",
                "python._pth", "python3._pth"):
        files.add(os.path.join(folder, rel))
    files.add(os.path.join(parent, "pyvenv.cfg"))
    files.add(os.path.join(parent, "Lib"))
    files.add(os.path.join(parent, "Modules"))
files.discard(venv_cfg)
# every folder above what the listing covers (a linked /lib replaced by a real one)
files.update(trees | sites | hooks | libdirs | bins)  # each folder itself: a link or a real one


def once(folders):
    """One folder per real folder (a linked /bin and /usr/bin hold the same files; the F
    entry of each says whether it is still the link)."""
    seen = {}
    for folder in sorted(folders, key=lambda f: (os.path.islink(f), os.path.realpath(f) != f, f)):
        seen.setdefault(os.path.realpath(folder), folder)
    return set(seen.values())


libdirs, bins = once(libdirs), once(bins)
for path in list(files | trees | sites | hooks | libdirs | bins):
    d = os.path.dirname(path)
    while d not in ("/", ""):
        files.add(d)
        d = os.path.dirname(d)
ids = args["ids"]
test_files = sorted({norm(os.path.join(root, i.split("::")[0])) for i in ids})
pristine, foreign = set(), set()


def consider(path):
    (pristine if os.path.isfile(path) and not os.path.islink(path) else foreign).add(path)


for tf in test_files:
    folder = os.path.dirname(tf)
    if os.path.isfile(tf):
        pristine.add(tf)
    for n in entries(folder):
        p = os.path.join(folder, n)
        if n.endswith(".py") and os.path.isfile(p) and not os.path.islink(p):
            pristine.add(p)
    d = folder
    while True:
        if d == root or d.startswith(root + "/") or root == "/":
            consider(os.path.join(d, "conftest.py"))
            consider(os.path.join(d, "__init__.py")) if d != root else None
        for c in CONFIGS:
            consider(os.path.join(d, c))
        if d == "/":
            break
        d = os.path.dirname(d)
if args.get("inifile"):
    pristine.add(norm(args["inifile"]))
    foreign.discard(norm(args["inifile"]))
conftests, package_dirs, count = [], [], 0
for here, dirs, names in os.walk(root):
    dirs[:] = [d for d in dirs if d not in (".git", "node_modules", "__pycache__", ".tox", ".venv")]
    count += len(names)
    if count > 50000:
        break
    if "conftest.py" in names:
        conftests.append(os.path.join(here, "conftest.py"))
for here, dirs, names in os.walk(workdir):
    dirs[:] = [d for d in dirs if d not in (".git", "node_modules", "__pycache__", ".tox", "site-packages")]
    if "__init__.py" in names:
        package_dirs.append(here)
for c in conftests:
    pristine.add(c)
    foreign.discard(c)

shadow = {}
listed = [stdlib, *sites]
on_path = {norm(p) for p in Seen.path if p and os.path.isdir(p)}
on_path = {p for p in on_path if not any(p == w or p.startswith(w.rstrip("/") + "/") for w in listed)}
for d in {workdir, root, pybin, *(os.path.dirname(t) for t in test_files), *on_path}:
    shadow[d] = entries(d)

from _pytest.junitxml import bin_xml_escape, mangle_test_address  # noqa: E402

keys = []
for node in ids:
    names = mangle_test_address(node)
    element = ET.Element("testcase", {"classname": ".".join(names[:-1]), "name": str(bin_xml_escape(names[-1]))})
    text = ET.tostring(element, encoding="unicode")
    found = re.search(r'classname="([^"]*)" name="([^"]*)"', text)
    keys.append({"node": node, "classname": found.group(1), "name": found.group(2)})

protected = set(sys.stdlib_module_names) | {"sitecustomize", "usercustomize"}
protected |= {top(n) for n in sys.modules} | {top(n) for n in Missed.names}
for folder in sites:
    protected |= {re.split(r"[.-]", n)[0] for n in entries(folder)}
protected = {n for n in protected if n.isidentifier() and n != "__pycache__"}
spec = {"F " + p for p in files} | {"T " + p for p in trees} | {"H " + p for p in hooks}
spec |= {"S " + p for p in sites} | {"P " + p for p in bins} | {"L " + p for p in libdirs}
spec |= {"I " + p for p in interps}
spec.add(("C " if os.path.isfile(venv_cfg) else "F ") + venv_cfg)
# the bytecode files gold's own run read (the verifier reuses each that still holds their bytes)
bytecode = {m.__cached__ for m in list(sys.modules.values()) if isinstance(getattr(m, "__cached__", None), str)}
bytecode = {p for p in bytecode if os.path.basename(os.path.dirname(p)) == "__pycache__" and os.path.isfile(p)}
keepalive = set()
for name in ("sh", "dash", "bash", "sleep", "busybox", "tini", "docker-init", "dumb-init", "catatonit"):
    found = shutil.which(name)
    if found:
        keepalive.add(hashlib.sha256(open(os.path.realpath(found), "rb").read()).hexdigest())
json.dump({
    "plugins": sorted({ep.name for ep in md.entry_points(group="pytest11")}),
    "spec": sorted(spec), "pristine": sorted(pristine), "foreign": sorted(foreign - pristine),
    "conftests": sorted(conftests), "shadow_dirs": shadow, "package_dirs": sorted(package_dirs),
    "protected_modules": sorted(protected), "keys": keys, "loader": loader, "elf": elf,
    "pybin": pybin, "prefix": sys.prefix, "path_env": os.environ.get("PATH", ""),
    "keepalive": sorted(keepalive), "bytecode": sorted(bytecode),
}, open(args["out"], "w"))
