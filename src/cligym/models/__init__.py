"""Every record that crosses a stage or is saved, in one place.

Stages exchange these pydantic models and save them as JSON (``cligym.models.io``); the
on-disk places they go are named in ``cligym.layout``. Nothing here runs anything.
"""

from cligym.models.curate import CheatHit, CurationSummary, LoopHit, TrajectoryDecision
from cligym.models.export import ExportReport
from cligym.models.fs import Entry, Finding, LeakReport, Listing
from cligym.models.gold import GoldEnv, Source
from cligym.models.io import load, save, write_atomic
from cligym.models.issue import STYLES, IssueText, TaskIssues
from cligym.models.probe import Dist, Probe, Touch
from cligym.models.rollout import RolloutResult, RolloutSummary
from cligym.models.run import InvertConfig, Summary
from cligym.models.task import (
    AgentRun,
    AppliedOperator,
    Candidate,
    DegradationQuery,
    TaskInstance,
    run_order,
)
from cligym.models.testrun import TestResult, TestRun
from cligym.models.trajectory import Trajectory
from cligym.models.validate import ModeResult, TaskValidation, ValidationReport
from cligym.models.verify import TaskCheck, Verification, VerifyReport

__all__ = [
    "AgentRun", "AppliedOperator", "Candidate", "CheatHit", "CurationSummary", "DegradationQuery", "Dist",
    "Entry", "ExportReport", "Finding", "GoldEnv", "InvertConfig", "IssueText", "LeakReport", "LoopHit",
    "Listing", "ModeResult", "Probe", "RolloutResult", "RolloutSummary", "STYLES", "Source", "Summary",
    "TaskInstance", "TaskIssues", "TaskValidation", "TestResult", "TestRun", "Touch", "Trajectory",
    "TaskCheck", "TrajectoryDecision", "ValidationReport", "Verification", "VerifyReport", "load", "run_order",
    "save", "write_atomic",
]
