"""Exceptions raised by the store."""


class StoreError(Exception):
    """Base class of store errors."""


class FinalStateError(StoreError):
    """A change was asked of a job that is already ``completed`` or ``failed``."""


class Duplicate(StoreError):
    """A row with the same unique key exists (also when two writers raced for it)."""
