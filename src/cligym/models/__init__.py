"""Every record that crosses a stage or is saved, in one place.

Stages exchange these pydantic models and save them as JSON (``cligym.models.io``); the
on-disk places they go are named in ``cligym.layout``. Nothing here runs anything.
"""
