"""Import names and the distributions that provide them.

Used where a project declares nothing for its tests (the modules its test files import,
``imported_distributions``) and when collection fails on a missing module
(``distribution_for``). The test files are parsed, never run.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from cligym.gold.index import project_links

#: Import names whose distribution is named otherwise (the common ones; any other name is
#: taken to be its distribution's name).
DISTRIBUTIONS = {
    "yaml": "PyYAML", "dateutil": "python-dateutil", "PIL": "Pillow", "bs4": "beautifulsoup4",
    "sklearn": "scikit-learn", "attr": "attrs", "OpenSSL": "pyOpenSSL", "jwt": "PyJWT",
    "dotenv": "python-dotenv", "Crypto": "pycryptodome", "cv2": "opencv-python", "serial": "pyserial",
    "magic": "python-magic", "docx": "python-docx", "hamcrest": "PyHamcrest", "git": "GitPython",
    "google.protobuf": "protobuf", "jose": "python-jose", "slugify": "python-slugify", "multipart": "python-multipart",
    "pkg_resources": "setuptools", "_pytest": "pytest", "xdist": "pytest-xdist",
    "pytest_benchmark": "pytest-benchmark", "pytest_asyncio": "pytest-asyncio", "pytest_mock": "pytest-mock",
    "dns": "dnspython", "nacl": "PyNaCl", "zmq": "pyzmq", "usb": "pyusb", "Levenshtein": "python-Levenshtein",
    "markdown": "Markdown", "jinja2": "Jinja2", "ruamel": "ruamel.yaml", "socks": "PySocks",
    "tomli_w": "tomli-w", "railroad": "railroad-diagrams", "sklearn_crfsuite": "sklearn-crfsuite",
    "typing_extensions": "typing-extensions", "pydantic_core": "pydantic-core",
}
#: What is never a distribution to install: the interpreter's own, or Windows-only.
NOT_DISTRIBUTIONS = {"__future__", "win32api", "winreg", "msvcrt", "_winapi", "nt"}


def distribution_for(module: str) -> str | None:
    """The distribution that provides the importable ``module`` (``a.b.c``), or None for
    the standard library."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in NOT_DISTRIBUTIONS or not top.isidentifier():
        return None
    return DISTRIBUTIONS.get(".".join(module.split(".")[:2])) or DISTRIBUTIONS.get(top) or top.replace("_", "-")


def imported_distributions(path: Path, project: str) -> list[str]:
    """The distributions the project's test files import at top level that neither the
    standard library, the project itself nor its own test helpers provide."""
    local = local_names(path) | {project.replace("-", "_").lower()}
    found: list[str] = []
    for file in sorted(path.rglob("*.py")):
        if not _is_test_file(file, path):
            continue
        for module in _imports(file):
            dist = distribution_for(module)
            if dist and module.split(".")[0].lower() not in local and dist not in found:
                found.append(dist)
    # a module the build generates (or a helper of odd name) is no distribution on the index
    return [dist for dist in found if project_links(dist) is not None]


def _is_test_file(file: Path, root: Path) -> bool:
    parts = file.relative_to(root).parts
    return any(p in ("test", "tests", "testing") for p in parts[:-1]) or file.name.startswith("test") or \
        file.name.endswith("_test.py") or file.name == "conftest.py"


def local_names(path: Path) -> set[str]:
    """Top-level names the project tree itself provides (packages, modules, src layout)."""
    names = set()
    for base in (path, path / "src", path / "tests", path / "test"):
        if base.is_dir():
            names |= {p.stem.lower() for p in base.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
            names |= {p.name.lower() for p in base.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    return names


def _imports(file: Path) -> list[str]:
    try:
        tree = ast.parse(file.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:  # top level only: what a guarded or lazy import needs is optional
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append(node.module)
    return out
