"""Read, in a container of the gold image and with gold's own interpreter, what the kernel
and the dynamic loader load besides the mapped shared objects (run by
cligym.harness.reference before read_reference.py, which adds its answer to the
fingerprint's spec; never imported by cligym).

Usage: read_loader.py INTERPRETER OUT. Writes to OUT one JSON object of paths: ``files``
(F entries: what every program's PT_INTERP path opens, the interpreter's and those of the
programs on PATH, and every link on its way; the loader's configuration, its cache when it
is what ldconfig makes of gold, the name service's configuration, OpenSSL's configuration,
which names the provider and engine modules libcrypto loads), ``trees`` (T entries: the
loader's configuration folder) and ``libdirs`` (L entries: every folder the loader
searches, with the legacy hwcap subfolders it searches first, and OpenSSL's module folders;
fingerprint.sh's m_libs lists each one's glibc-hwcaps folder whole).
"""

import glob
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

norm = os.path.normpath


def entries(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def links_met(path):
    """Every path met on the way to what ``path`` opens, component by component: each link
    (a linked folder too) by the name it was reached through, and the file at the end."""
    met, todo, here = [], [c for c in path.split("/") if c], "/"
    hops = 0
    while todo and hops < 40:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            here = os.path.dirname(here)
            continue
        step = os.path.join(here, name)
        if os.path.islink(step):
            hops += 1
            met.append(step)
            link = os.readlink(step)
            here = "/" if link.startswith("/") else here
            todo[:0] = [c for c in link.split("/") if c]
        else:
            here = step
    return [path, *met, here]


def pt_interp(path):
    """The program interpreter an ELF executable names (its PT_INTERP), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
                return None
            end = "<" if head[5] == 1 else ">"
            if head[4] == 2:
                (phoff,), (size, count) = struct.unpack(end + "Q", head[32:40]), struct.unpack(end + "HH", head[54:58])
            else:
                (phoff,), (size, count) = struct.unpack(end + "I", head[28:32]), struct.unpack(end + "HH", head[42:46])
            for i in range(min(count, 64)):
                f.seek(phoff + i * size)
                ph = f.read(size)
                if len(ph) < 32 or struct.unpack(end + "I", ph[:4])[0] != 3:
                    continue
                if head[4] == 2:
                    offset, length = struct.unpack(end + "Q", ph[8:16])[0], struct.unpack(end + "Q", ph[32:40])[0]
                else:
                    offset, length = struct.unpack(end + "I", ph[4:8])[0], struct.unpack(end + "I", ph[16:20])[0]
                f.seek(offset)
                name = f.read(min(length, 4096)).split(b"\0")[0].decode("utf-8", "replace")
                return name or None
    except (OSError, struct.error):
        return None
    return None


def loader_search(loader):
    """(the loader's system search folders, the subfolders it searches in every library
    folder first) as gold's loader says (``--help``, glibc 2.33 and later); without it,
    glibc's x86-64 folders and subfolders."""
    system, subdirs, legacy = [], [], []
    try:
        text = subprocess.run([loader, "--help"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    part = ""
    for line in text.splitlines():
        if not line.startswith(" "):
            part = line
            continue
        words = line.split()
        if part.startswith("Shared library search path") and "(system search path)" in line:
            system.append(words[0])
        elif part.startswith("Subdirectories of glibc-hwcaps") and words:
            subdirs.append("glibc-hwcaps/" + words[0])
        elif part.startswith("Legacy HWCAP") and words and "searched" in line:
            legacy.append(words[0])
    if not system:
        system = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    # legacy subfolders: every sequence of the searched names (tls/x86_64/...), as deep as
    # there are names
    names = sorted(set(legacy))
    for depth in range(1, len(legacy) + 1):
        subdirs.extend("/".join(c) for c in itertools.product(names, repeat=depth))
    return system, subdirs


def ld_conf_dirs(path="/etc/ld.so.conf", seen=None):
    """(the folders ldconfig's configuration names, the configuration files read), includes
    followed."""
    seen = set() if seen is None else seen
    folders, read = [], []
    if path in seen or len(seen) > 200:
        return folders, read
    seen.add(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return folders, read
    read.append(path)
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include") and line[7:8].isspace():
            for pattern in line[8:].split():
                pattern = pattern if pattern.startswith("/") else os.path.join(os.path.dirname(path), pattern)
                for found in sorted(glob.glob(pattern)):
                    more, files = ld_conf_dirs(found, seen)
                    folders += more
                    read += files
        elif line.startswith("/"):
            folders.append(norm(line.split("=", 1)[0].rstrip("/") or "/"))
    return folders, read


def cache_is_ldconfigs():
    """Whether /etc/ld.so.cache is what gold's ldconfig makes of gold (it writes a fresh one
    elsewhere and touches no link): then an honest repair that runs ldconfig leaves it as
    it is, and the listing may compare it byte for byte."""
    ldconfig = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                                 if os.path.isfile(p)), None)

    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return None

    if ldconfig is None:
        return read("/etc/ld.so.cache") is None  # none, and nothing here to make one
    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, "ld.so.cache")
        try:
            subprocess.run([ldconfig, "-X", "-C", fresh], capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.SubprocessError):
            return False
        made = read(fresh)
        return made is not None and made == read("/etc/ld.so.cache")


def openssl_places():
    """(OpenSSL's configuration files, its module folders): libcrypto reads the first when a
    process first uses it (hashlib, ssl), and a provider or engine it names, by path or by
    name in those folders, is loaded into that process and runs."""
    try:
        import _ssl

        home = os.path.dirname(_ssl.get_default_verify_paths()[1])  # OPENSSLDIR
    except (ImportError, OSError, IndexError, TypeError):
        return [], []
    configs, folders, todo = [], [], [os.environ.get("OPENSSL_CONF") or os.path.join(home, "openssl.cnf")]
    while todo and len(configs) < 100:
        path = norm(todo.pop(0))
        if path in configs:
            continue
        configs.append(path)
        names = [os.path.join(path, n) for n in entries(path)] if os.path.isdir(path) else [path]
        for name in names:
            try:
                with open(name, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            if name != path:
                configs.append(name)
            for line in lines:
                words = line.strip().replace("=", " ").split()
                if words[:1] == [".include"] and len(words) > 1:
                    todo.append(words[1] if words[1].startswith("/") else os.path.join(home, words[1]))
    with open("/proc/self/maps") as maps:
        crypto = {line.split()[-1] for line in maps if "/libcrypto" in line.split()[-1]}
    for lib in crypto:
        here = os.path.dirname(os.path.realpath(lib))
        folders += [os.path.join(here, "ossl-modules"), *glob.glob(os.path.join(here, "engines-*"))]
    folders += [os.environ[v] for v in ("OPENSSL_MODULES", "OPENSSL_ENGINES") if os.environ.get(v, "").startswith("/")]
    return configs, folders


def mapped_loader():
    """The dynamic loader this process maps (its path in /proc/self/maps), or ""."""
    with open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for line in lines:
        part = line.split()[-1]
        if part.startswith("/") and os.path.basename(os.path.realpath(part)).startswith(("ld-linux", "ld-")) \
                and ".so" in part:
            return part
    return ""


def main(interpreter, out):
    files, trees, libdirs = set(), set(), set()
    loader = mapped_loader()
    bins = {norm(d) for d in os.environ.get("PATH", "").split(":") if d.startswith("/")}
    bins.add(os.path.dirname(interpreter))
    # the program loader: what every program's PT_INTERP path opens (the interpreter's, and
    # those of the programs on PATH), through every link on the way (/lib64 -> usr/lib64,
    # its ld-linux link); the kernel starts it, with whatever capabilities the program gets
    interpreters = {pt_interp(os.path.realpath(sys.executable))}
    for folder in sorted(bins):
        for name in entries(folder):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                interpreters.add(pt_interp(path))
    for name in sorted(n for n in interpreters if n and n.startswith("/")):
        files.update(links_met(norm(name)))
    # where the loader looks for a library: the folders its configuration names, its system
    # folders, each with the subfolders it searches first; and what decides that: its
    # configuration and cache, and the name service's configuration (nsswitch.conf names
    # the libnss_* modules glibc loads)
    conf_dirs, conf_files = ld_conf_dirs()
    system_dirs, subdirs = loader_search(loader) if loader else ([], [])
    for folder in {*conf_dirs, *system_dirs}:
        libdirs.add(folder)
        libdirs.update(os.path.join(folder, sub) for sub in subdirs if not sub.startswith("glibc-hwcaps/"))
    files.update({"/etc/ld.so.conf", "/etc/nsswitch.conf", "/etc/ld.so.preload", *conf_files})
    trees.add("/etc/ld.so.conf.d")
    configs, modules = openssl_places()
    files.update(configs)
    libdirs.update(modules)
    if cache_is_ldconfigs():
        files.add("/etc/ld.so.cache")
    with open(out, "w") as f:
        json.dump({"files": sorted(files), "trees": sorted(trees), "libdirs": sorted(libdirs)}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
