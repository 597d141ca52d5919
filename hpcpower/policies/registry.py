"""Policies by name, as the CLI and scenarios select them.

``make_policy("snf-ipm", timeout_s=3600)`` builds a ready controller. A new
policy is registered by adding one entry to :data:`POLICIES` (or by passing a
:class:`~hpcpower.policies.base.Policy` object to the Python API directly).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from hpcpower.errors import InputError
from hpcpower.policies.base import Combined, Policy
from hpcpower.policies.icon import VARIANTS, IconConfig, SnfIcon
from hpcpower.policies.power.always_on import AlwaysOn
from hpcpower.policies.power.ipm import IPM
from hpcpower.policies.queue.fcfs_easy import FCFSEasy
from hpcpower.policies.queue.snf import SNF


def _combined(queue_cls, power: str, name: str) -> Callable[..., Policy]:
    def factory(timeout_s: float | None = 7200.0, overrun_release: str = "never") -> Policy:
        manager = AlwaysOn() if power == "always-on" else IPM(timeout_s)
        return Combined(queue_cls(overrun_release), manager, name=name)

    return factory


def _icon(name: str) -> Callable[..., Policy]:
    fixed = VARIANTS[name]

    def factory(**params: Any) -> Policy:
        known = set(IconConfig.names())
        unknown = [k for k in params if k not in known]
        if unknown:
            bad = ", ".join(f"policy.{k}" for k in unknown)
            raise InputError(
                f"policy {name!r} does not take setting(s) {bad}; "
                f"it takes: {', '.join(sorted(known))}"
            )
        clash = [k for k in params if k in fixed and params[k] != fixed[k]]
        if clash:
            raise InputError(
                f"policy.{clash[0]} is fixed to {fixed[clash[0]]!r} by the variant {name!r}; "
                "use 'snf-icon' to choose it"
            )
        return SnfIcon(IconConfig(**{**params, **fixed}), name=name)

    return factory


#: name -> (factory, one-line description)
POLICIES: dict[str, tuple[Callable[..., Policy], str]] = {
    "fcfs-easy": (
        _combined(FCFSEasy, "always-on", "fcfs-easy"),
        "FCFS with EASY backfilling, nodes always on",
    ),
    "snf": (_combined(SNF, "always-on", "snf"), "Smallest-Need-First, nodes always on"),
    "fcfs-easy-ipm": (
        _combined(FCFSEasy, "ipm", "fcfs-easy-ipm"),
        "FCFS/B + IPM: EASY backfilling, idle timeout, wake planning (paper baseline)",
    ),
    "snf-ipm": (
        _combined(SNF, "ipm", "snf-ipm"),
        "SNF + IPM: Smallest-Need-First, idle timeout, wake planning (paper baseline)",
    ),
    "snf-icon": (
        _icon("snf-icon"),
        "SNF-ICON: SNF with adaptive warm-spare optimisation, SNF+IPM fallback (paper)",
    ),
    "snf-icon-nf": (_icon("snf-icon-nf"), "SNF-ICON without fallback (always ICON mode)"),
    "snf-icon-ng": (_icon("snf-icon-ng"), "SNF-ICON without the arrival-recency gate"),
    "snf-icon-ngnf": (_icon("snf-icon-ngnf"), "SNF-ICON without gate and without fallback"),
}


def make_policy(name: str, **params: Any) -> Policy:
    """Build the policy called ``name`` with its parameters.

    Raises:
        InputError: unknown name, or a parameter the policy does not take.
    """
    try:
        factory, _ = POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}") from None
    accepted = inspect.signature(factory).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        unknown = [k for k in params if k not in accepted]
        if unknown:
            known = ", ".join(f"policy.{k}" for k in accepted) or "none"
            raise InputError(
                f"policy {name!r} has no setting {', '.join('policy.' + k for k in unknown)} "
                f"(its settings: {known})"
            )
    return factory(**params)
