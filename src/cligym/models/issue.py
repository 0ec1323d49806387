"""The issue record: a task's problem statements in three styles, each with a hint and a
hint-free twin."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Style = Literal["strong", "balanced", "weak"]
STYLES: tuple[Style, ...] = ("strong", "balanced", "weak")


class IssueText(BaseModel):
    style: Style
    with_hint: str
    without_hint: str


class TaskIssues(BaseModel):
    instance_id: str
    writer: str = "template"  # "llm": ``style``'s text was written by a model
    texts: dict[str, IssueText]
    #: the style chosen for this task (by seed) when a model wrote it; the others are templates
    style: str | None = None
    #: why a model's texts were refused (leaks, unshown symptoms...), one line per try
    refused: list[str] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def text(self, style: str) -> IssueText:
        """The text of ``style``; ``"seeded"``: the style chosen for this task (``style``),
        strong for template-only records."""
        return self.texts[self.style or "strong"] if style == "seeded" else self.texts[style]
