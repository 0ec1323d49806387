"""The gold stage: real project → verified, healthy environment (``cligym gold``)."""

from cligym.gold.models import GoldEnv, Source
from cligym.gold.stage import GOLD_FILE, make_gold

__all__ = ["GOLD_FILE", "GoldEnv", "Source", "make_gold"]
