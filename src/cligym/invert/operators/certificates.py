"""Operators: certificates.

The PEM bundles of trusted CA certificates that tests load: the system bundle behind
OpenSSL's default verify paths (what ssl.create_default_context() loads) and bundles that
packages ship (certifi's cacert.pem), or any bundle a test opens itself.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from cligym.invert.operators.base import GoldFiles, Operator, fill, register
from cligym.invert.operators.dependencies import REINSTALL, WheelData, owner, wheel_data
from cligym.invert.operators.probing import (
    narrowest_paths,
    own_touch,
    project_root,
)
from cligym.invert.operators.targets import Target, TargetData, q
from cligym.models.probe import Probe

CATEGORY = "certificates"

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
UPDATE_CA = "/usr/sbin/update-ca-certificates"
BUNDLE_SUFFIXES = (".pem", ".crt", ".cer", ".bundle")
SSL_MODULES = {"ssl", "_ssl"}
SSL_VARS = {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
PEM_BEGIN = b"-----BEGIN CERTIFICATE-----"

#: Appended by ca_bundle_garbage: a certificate whose copy was cut short.
BROKEN_BLOCK = (
    "-----BEGIN CERTIFICATE-----",
    "MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAwDQYJKoZIhvcNAQELBQAw",
    "TzELMAkGA1UEBhMCVVMxKTAnBgNVBAoTIEludGVybmV0IFNlY3VyaXR5IFJlc2Vh",
    "-----END CERTIFICATE-----",
)


def _bundles(probe: Probe, tests: list[str]) -> list[tuple[str, list[str]]]:
    """CA bundles and the tests that load them, the ones fewer tests load first."""
    system = {probe.realpath(p) for p in (probe.ssl.get("cafile"), probe.ssl.get("openssl_cafile")) if p}
    if probe.env.get("SSL_CERT_FILE"):
        system = {probe.realpath(probe.env["SSL_CERT_FILE"])}
    certifi = {probe.realpath(str(PurePosixPath(dist.path).parent / "certifi" / "cacert.pem"))
               for dist in probe.dists if dist.name.lower() == "certifi" and dist.path}
    project = project_root(probe).rstrip("/") + "/"
    found: dict[str, list[str]] = {}

    def add(path: str, test: str) -> None:
        entry = probe.files.get(path)
        if entry is not None and entry.type == "f" and entry.size > 0 and test not in found.setdefault(path, []):
            found[path].append(test)

    for test in tests:
        mine = own_touch(probe, test)
        for path in mine.files:
            real = probe.realpath(path)
            if not real.endswith(BUNDLE_SUFFIXES) or real.startswith(project):
                continue  # a project's own test certificates are test data, not a trust store
            if real in system or real in certifi or "/ssl/" in real or "cert" in real.rsplit("/", 1)[-1].lower():
                add(real, test)
        modules = set(mine.modules)
        if modules & SSL_MODULES or any("/libssl" in lib for lib in mine.libs) or set(mine.env) & SSL_VARS:
            for path in system:
                add(path, test)
        if any(m == "certifi" or m.startswith("certifi.") for m in modules):
            for path in certifi:
                add(path, test)
    return narrowest_paths(found)


def _is_bundle(gold: GoldFiles, path: str) -> bytes | None:
    content = gold.read(path)
    return content if content and PEM_BEGIN in content else None


class GarbageData(TargetData):
    size: int  # of the original bundle, which the repair truncates it back to


@register
class CaBundleGarbage(Operator):
    """A provisioning step that appended a corporate CA certificate to a bundle that tests
    load, but the pasted certificate was cut short."""

    name = "ca_bundle_garbage"
    symptom = (
        "Creating an SSL context fails with ssl.SSLError: [X509] PEM lib, or the default "
        "context trusts no certificate authority at all."
    )
    hint = "the bundle of trusted CA certificates"
    shows = (r"PEM lib", r"SSLError", r"\bX509\b", r"certificate")
    offline = "Cut the incomplete certificate block off the end of the CA bundle {path}."
    Data = GarbageData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        return [self.target(path=p, touching=users, size=probe.files[p].size) for p, users in _bundles(probe, tests)]

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        content = _is_bundle(gold, target.path)
        if content is None:
            return None
        return target.with_data(size=len(content))

    def apply(self, target: Target) -> list[str]:
        echoes = "; ".join(f"echo {q(line)}" for line in BROKEN_BLOCK)
        return [f"RUN {{ {echoes}; }} >> {q(target.path)}"]

    def solution(self, target: Target) -> list[str]:
        return [f"truncate -s {int(target.data.size)} {q(target.path)}"]


class EmptiedData(WheelData):
    regenerate: bool = False  # the system bundle, rebuilt by update-ca-certificates


@register
class CaBundleEmptied(Operator):
    """A CA bundle that tests load left empty by a certificate update interrupted half-way
    (the file truncated, the new contents never written)."""

    name = "ca_bundle_emptied"
    symptom = (
        "TLS verification cannot work: loading the CA bundle raises 'no certificate or crl found', "
        "or the default SSL context has no CA certificates."
    )
    hint = "the bundle of trusted CA certificates"
    shows = (r"no certificate or crl found", r"certificate verify failed", r"SSLError", r"\bX509\b",
             r"CA certificates?")
    offline = "Rebuild the system CA bundle with update-ca-certificates from the certificates the image keeps."
    Data = EmptiedData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        regenerable = (
            UPDATE_CA in probe.files and "/etc/ca-certificates.conf" in probe.files
            and "/usr/share/ca-certificates" in probe.files
        )
        targets = []
        for path, users in _bundles(probe, tests):
            regenerate = path == SYSTEM_BUNDLE and regenerable
            wheel = {} if regenerate else wheel_data(probe, owner(probe, path))
            if regenerate or wheel.get("reinstall"):  # else no copy in the image
                targets.append(self.target(path=path, touching=users, regenerate=regenerate, **wheel))
        return targets

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        if not (target.data.regenerate or target.data.reinstall):
            return None
        return target if _is_bundle(gold, target.path) is not None else None

    def apply(self, target: Target) -> list[str]:
        return [f"RUN : > {q(target.path)}"]

    def solution(self, target: Target) -> list[str]:
        if target.data.regenerate:
            # the bundle is built from /usr/share/ca-certificates and /etc/ca-certificates.conf
            return ["update-ca-certificates --fresh >/dev/null"]
        return [target.data.reinstall]

    def offline_repair(self, target: Target) -> str:
        return fill(self.offline if target.data.regenerate else REINSTALL, target)
