"""Container runtime: a thin layer over the Docker Engine API. Knows nothing of the pipeline."""

from cligym.runtime.base_image import ensure_base_image
from cligym.runtime.engine import Change, RunResult, Runtime, Session

__all__ = ["Change", "RunResult", "Runtime", "Session", "ensure_base_image"]
