"""Gold images through a registry: push and pull measured (prints a table; asserts nothing).

    .venv/bin/python benchmarks/bench_registry.py SOURCE... [--json]

SOURCE: gold, run, export or dataset directories whose gold images are in the local
engine. A registry (Debian's docker-registry) starts on 127.0.0.1 with an empty store, and
a second Docker engine with an empty data root; then, each timed:

1. ``cligym images push`` of every gold image to the registry (its layers compressed and
   sent; a layer two images share is sent once);
2. the same push again (every layer already there: what a re-run costs);
3. ``cligym images pull`` on the empty engine (layers fetched and unpacked).

Bytes: what the registry stores (its blobs, each once) and what the empty engine's data
root grew by. The registry and the engine are removed afterwards; the sources' records
(gold.json, registry.json) keep the pushes, so give copies if that matters.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.engine.servers import empty_engine, registry_server, stored_bytes  # noqa: E402


def cligym(*args: str, engine: str | None = None) -> tuple[float, dict]:
    env = None
    if engine:
        import os

        env = {**os.environ, "DOCKER_HOST": engine}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cligym", *args, "--json", "-q"], capture_output=True, text=True,
                          env=env)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"cligym {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    return seconds, json.loads(done.stdout)


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def measure(sources: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="cligym-bench-registry-") as tmp:
        folder = Path(tmp)
        with registry_server(folder / "registry") as registry, empty_engine(folder / "engine") as engine:
            push_s, pushed = cligym("images", "push", registry, *sources)
            again_s, _ = cligym("images", "push", registry, *sources)
            stored = stored_bytes(folder / "registry")
            before = du(folder / "engine" / "data")
            pull_s, pulled = cligym("images", "pull", *sources, engine=engine)
            grown = du(folder / "engine" / "data") - before
    images = pushed["images"]
    return {
        "images": len(images), "image_bytes": sum(i["bytes"] for i in images), "registry_bytes": stored,
        "push_seconds": round(push_s, 1), "push_again_seconds": round(again_s, 1),
        "pull_seconds": round(pull_s, 1), "pulled": sum(i["pulled"] for i in pulled["images"]),
        "engine_bytes": grown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.sources)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    mb = 1e6
    print(f"gold images                     {result['images']}")
    print(f"their layers as the registry has them (sum per image)  {result['image_bytes'] / mb:.1f} MB")
    print(f"registry store (shared layers once)                    {result['registry_bytes'] / mb:.1f} MB")
    print(f"push, empty registry            {result['push_seconds']} s")
    print(f"push again (all layers there)   {result['push_again_seconds']} s")
    print(f"pull into an empty engine       {result['pull_seconds']} s ({result['pulled']} images)")
    print(f"engine data root grew by        {result['engine_bytes'] / mb:.1f} MB")


if __name__ == "__main__":
    main()
