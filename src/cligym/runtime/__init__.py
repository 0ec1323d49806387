"""Container runtime: a thin layer over the Docker Engine API. Knows nothing of the pipeline.

No engine object leaves this package and every engine failure is a ``CligymError``."""

from cligym.runtime.base_image import ensure_base_image
from cligym.runtime.common import RunResult
from cligym.runtime.engine import Runtime, remove_own_everywhere
from cligym.runtime.names import ImageKind
from cligym.runtime.sessions import Session

__all__ = ["ImageKind", "RunResult", "Runtime", "Session", "ensure_base_image", "remove_own_everywhere"]
