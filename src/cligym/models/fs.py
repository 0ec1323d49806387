"""Filesystem records: one entry of an image's listing, and what a broken image changed
against gold (with the leak scan's findings)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Entry(BaseModel):
    type: str  # f file, d directory, l symlink, ...
    mode: str
    size: int
    mtime: str
    link: str = ""

    def same_as(self, other: Entry) -> bool:
        return (self.type, self.mode, self.size, self.mtime, self.link) == (
            other.type, other.mode, other.size, other.mtime, other.link,
        )


Listing = dict[str, Entry]


class Finding(BaseModel):
    kind: str
    path: str
    detail: str = ""


class LeakReport(BaseModel):
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    now: dict[str, Entry] = Field(default_factory=dict)  # the broken image's entries of the changed paths

    @property
    def clean(self) -> bool:
        return not self.findings
