"""Container runtime: a thin layer over the Docker Engine API. Knows nothing of the pipeline.

No engine object leaves this package and every engine failure is a ``CligymError``."""

from cligym.runtime.base_image import ensure_base_image
from cligym.runtime.engine import Change, Reaped, RunResult, Runtime, Session, remove_own_everywhere
from cligym.runtime.names import ImageKind
from cligym.runtime.owner import run_id

__all__ = ["Change", "ImageKind", "Reaped", "RunResult", "Runtime", "Session", "ensure_base_image",
           "remove_own_everywhere", "run_id"]
