"""The one exception tree of pgqueue.

Every error that pgqueue raises on purpose derives from :class:`PgQueueError`.
Driver errors (asyncpg, psycopg) are translated at one edge,
:func:`pgqueue.db.errormap.translate`, and re-raised ``from`` the original.

    PgQueueError
    ├── ConfigError                 a setting is invalid (names the setting)
    ├── ValidationError             bad input: names the field, nothing was written
    │   ├── DependencyNotFound      dependsOn / parentId names no job
    │   └── InvalidState            the job is not in a state that allows this
    ├── ProtocolError               a frame or command could not be understood
    │   └── FrameTooLarge           a frame declared more bytes than allowed
    ├── SchemaError                 the database schema is missing or too new
    ├── StorageError                the database failed
    │   ├── DatabaseUnavailable     no connection could be made or it broke
    │   └── IndeterminateCommit     the COMMIT was sent but its outcome is unknown
    ├── JobNotFound                 no job with that id
    ├── DuplicateJob                a unique key already names a live job
    ├── LeaseLost                   a stale claim: token, fence or lease no longer current
    │   ├── AlreadyFinalized        the job reached a terminal state already
    │   └── JobCancelled            the job was cancelled while it was active
    ├── BrokerFenced                this broker's session is no longer the live one
    │   └── BrokerIdInUse           another live process holds this broker id
    ├── AuthError                   a token was refused
    │   └── Forbidden               the token may not do this (read-only)
    ├── ConnectionLost              a client connection dropped (retryable)
    ├── CommandTimeout              no answer in time (outcome unknown for writes)
    ├── RemoteError                 a broker answered ``{ok: false, error}``
    ├── JobFailed                   a job awaited with ``wait_for`` failed for good
    └── UnrecoverableError          raised by a job handler: fail without retries
"""

from __future__ import annotations

__all__ = [
    "AlreadyFinalized",
    "AuthError",
    "BrokerFenced",
    "BrokerIdInUse",
    "CommandTimeout",
    "ConfigError",
    "ConnectionLost",
    "DatabaseUnavailable",
    "DependencyNotFound",
    "DuplicateJob",
    "Forbidden",
    "FrameTooLarge",
    "IndeterminateCommit",
    "InvalidState",
    "JobCancelled",
    "JobFailed",
    "JobNotFound",
    "LeaseLost",
    "PgQueueError",
    "ProtocolError",
    "RemoteError",
    "SchemaError",
    "StorageError",
    "UnrecoverableError",
    "ValidationError",
]


class PgQueueError(Exception):
    """A pgqueue error."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or type(self).__name__).strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class ConfigError(PgQueueError):
    """A setting is invalid."""


class ValidationError(PgQueueError):
    """The input was refused; nothing was written."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class DependencyNotFound(ValidationError):
    """A dependency or parent names no job."""


class InvalidState(ValidationError):
    """The job is not in a state that allows this operation."""


class ProtocolError(PgQueueError):
    """A frame or command could not be understood."""


class FrameTooLarge(ProtocolError):
    """A frame declared more bytes than the limit."""


class SchemaError(PgQueueError):
    """The database schema is missing or newer than this version of pgqueue knows."""


class StorageError(PgQueueError):
    """The database failed."""


class DatabaseUnavailable(StorageError):
    """The database could not be reached, or the connection broke."""


class IndeterminateCommit(StorageError):
    """The COMMIT was sent but its outcome is unknown; retry with the same custom id."""


class JobNotFound(PgQueueError):
    """Job not found"""

    def __init__(self, job_id: str | None = None, message: str | None = None) -> None:
        super().__init__(message or "Job not found")
        self.job_id = job_id


class DuplicateJob(PgQueueError):
    """A unique key already names a live job."""

    def __init__(self, message: str, *, existing_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class LeaseLost(PgQueueError):
    """The claim is no longer current (token, fence or lease); nothing was changed."""

    def __init__(self, job_id: str, message: str | None = None) -> None:
        super().__init__(message or f"Invalid or expired lock token for job {job_id}")
        self.job_id = job_id


class AlreadyFinalized(LeaseLost):
    """The job already reached a terminal state."""

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id, f"Job {job_id} is already finalized")


class JobCancelled(LeaseLost):
    """The job was cancelled while a worker held it: its claim ended."""

    def __init__(self, job_id: str, message: str | None = None) -> None:
        super().__init__(job_id, message or f"Job {job_id} was cancelled")


class BrokerFenced(PgQueueError):
    """This broker's session is no longer live: it may not claim, renew or complete."""


class BrokerIdInUse(BrokerFenced):
    """Another live process holds this broker id."""


class AuthError(PgQueueError):
    """The token was refused."""


class Forbidden(AuthError):
    """The token is valid but may not do this (a write with a read-only token)."""


class ConnectionLost(PgQueueError):
    """The connection dropped before an answer arrived; the request may be retried."""


class CommandTimeout(PgQueueError):
    """No answer arrived in time; a write may or may not have happened."""


class RemoteError(PgQueueError):
    """The broker answered with an error."""


class JobFailed(PgQueueError):
    """The job failed for good (dead-lettered); ``failed_reason`` says why."""

    def __init__(self, job_id: str, failed_reason: str | None = None) -> None:
        super().__init__(f"Job {job_id} failed: {failed_reason or 'unknown reason'}")
        self.job_id = job_id
        self.failed_reason = failed_reason


class UnrecoverableError(PgQueueError):
    """Raised by a job handler: the job fails at once and goes to the dead-letter queue."""
