"""Exceptions raised by the store."""


class StoreError(Exception):
    """Base class of store errors."""


class FinalStateError(StoreError):
    """A change was asked of a job that is already ``completed`` or ``failed``."""


class Duplicate(StoreError):
    """A row with the same unique key exists (also when two writers raced for it)."""


class Unavailable(StoreError):
    """The database could not be reached or could not take the work in time (a lost
    connection, SQLite's writer lock held past the busy timeout, an exhausted pool)."""
