"""The services' refusals: one tree, rooted at ``ServiceError``, that every surface maps to
its own answers (the HTTP API to problem+json, the CLI to messages). No surface parses text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The database cannot take the work now: surfaces answer "retry later" (503).
from seojobs.store.errors import Unavailable as Unavailable


class ServiceError(Exception):
    code = "error"


@dataclass(frozen=True)
class FieldError:
    """One refused field: ``path`` as the caller named it (``("urls", 3)``)."""

    path: tuple[str | int, ...]
    message: str


class Invalid(ServiceError):
    """Input the caller can fix. ``in_params`` says the paths are inside a job's params (a
    surface that nests params in its body prefixes them)."""

    code = "validation_error"

    def __init__(
        self,
        field: str | Sequence[FieldError],
        message: str = "",
        *,
        code: str = "validation_error",
        in_params: bool = False,
    ) -> None:
        if isinstance(field, str):
            self.errors: list[FieldError] = [FieldError((field,), message)]
        else:
            self.errors = list(field)
        self.code = code
        self.in_params = in_params
        super().__init__(
            "; ".join(f"{'.'.join(map(str, e.path)) or 'params'}: {e.message}" for e in self.errors)
        )

    def within(self, name: str) -> Invalid:
        """The same refusal with its paths nested under ``name`` (a body's ``params``)."""
        errors = [FieldError((name, *e.path), e.message) for e in self.errors]
        return Invalid(errors, code=self.code)


class NotFound(ServiceError, LookupError):
    """The thing does not exist, or belongs to someone else (callers must not tell which)."""

    code = "not_found"


class Conflict(ServiceError):
    """The change clashes with what exists: a name already taken, the default project."""

    def __init__(self, message: str, code: str = "conflict") -> None:
        super().__init__(message)
        self.code = code


class JobFinished(Conflict):
    """The job has already ended (``state`` is ``completed`` or ``failed``): it cannot be
    cancelled any more."""

    def __init__(self, job_id: int, state: str, error_code: str | None) -> None:
        ended = f"{state} ({error_code})" if error_code else state
        super().__init__(f"job {job_id} has already finished: {ended}", code="job_finished")
        self.job_id = job_id
        self.state = state
        self.error_code = error_code


class QuotaExceeded(ServiceError):
    """The request can never fit the user's quota (e.g. a schedule whose every job would need
    more than the whole quota). A job that merely does not fit today is stored failed with
    ``quota_exceeded`` instead, where its owner looks for results."""

    code = "quota_exceeded"

    def __init__(self, quota: str, message: str) -> None:
        super().__init__(message)
        self.quota = quota
