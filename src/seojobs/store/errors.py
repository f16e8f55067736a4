"""Exceptions raised by the store."""


class StoreError(Exception):
    """Base class of store errors."""


class FinalStateError(StoreError):
    """A change was asked of a job that is already ``completed`` or ``failed``."""
