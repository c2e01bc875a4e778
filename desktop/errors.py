"""The one error type for "your input, configuration or environment is wrong" (CLI exit status 2)."""

from __future__ import annotations


class BadInput(Exception):
    """The user's input, configuration or environment is wrong; the message is one line naming the fix."""


def disk_problem(error: OSError) -> str | None:
    """One line for a file that could not be written for lack of space (None for any other OSError)."""
    import errno

    from engine.journal import JournalWriteFailed

    if error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    first: BaseException | None = error
    while first is not None:  # the journal's failure, when a full disk then failed the files written after it
        if isinstance(first, JournalWriteFailed):
            return str(first)
        first = first.__context__
    name = f" {error.filename}" if error.filename else ""
    code = errno.errorcode[error.errno]
    return f"cannot write{name}: {(error.strerror or 'no space left').lower()} ({code}); free some disk space"
