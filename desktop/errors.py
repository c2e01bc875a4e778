"""The one error type for "your input, configuration or environment is wrong" (CLI exit status 2)."""

from __future__ import annotations


class BadInput(Exception):
    """The user's input, configuration or environment is wrong; the message is one line naming the fix."""
