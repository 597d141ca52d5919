"""Exceptions with messages that say what to fix.

Every error hpcpower raises on bad input is an :class:`HpcpowerError`; the CLI
prints its message and exits non-zero without a traceback.
"""

from __future__ import annotations


class HpcpowerError(Exception):
    """Base class of every error hpcpower reports to a user."""


class InputError(HpcpowerError, ValueError):
    """A file, field or setting is malformed; the message names which and where."""


class IllegalTransition(HpcpowerError, RuntimeError):
    """A node was asked for a power-state change its current state forbids."""


class PolicyError(HpcpowerError, RuntimeError):
    """A policy returned a decision the engine cannot apply."""
