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


class MissingExtra(HpcpowerError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def require(module: str, extra: str, purpose: str) -> None:
    """Import ``module`` or raise :class:`MissingExtra` naming ``pip install "hpcpower[extra]"``.

    Args:
        module: The module to import, e.g. ``"pyarrow"``.
        extra: The package extra that installs it, e.g. ``"tables"``.
        purpose: What needs it, for the message (``"Parquet output"``).
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f'{purpose} needs {module}, which is not installed: pip install "hpcpower[{extra}]"'
        ) from exc
