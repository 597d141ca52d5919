"""Policies by name, as the CLI and scenarios select them.

``make_policy("snf-ipm", timeout_s=3600)`` builds a ready controller. A new
policy is registered by adding one entry to :data:`POLICIES` (or by passing a
:class:`~hpcpower.policies.base.Policy` object to the Python API directly).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
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

    ``name`` is a registered policy (``hpcpower policies``) or a policy of
    your own, given as ``path/to/file.py:factory`` or ``module:factory``:
    the factory is called with the parameters it takes (``timeout_s`` only
    if it takes it) and must return a :class:`Policy`. ``rl:PATH`` is a
    trained agent deciding power (:func:`hpcpower.rl.load_agent_policy`).

    Raises:
        InputError: unknown name, or a parameter the policy does not take.
    """
    if name.startswith("rl:"):
        from hpcpower.rl.agent import load_agent_policy

        return load_agent_policy(name[3:], **params)
    if ":" in name:
        return load_policy(name, **params)
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


def load_policy(spec: str, **params: Any) -> Policy:
    """Build a policy from your own code: ``path/to/file.py:factory`` or ``module:factory``.

    The file is run as a module of its own (it may import hpcpower and its
    neighbours in its folder); ``factory`` is any callable in it that returns
    a :class:`Policy`: a class or a function. Parameters the factory does
    not take are an error, except ``timeout_s`` (every scenario has one),
    which is passed only to a factory that takes it.

    Raises:
        InputError: the file, module or factory is missing, the code fails
            to load (the message names the file and line), or the factory
            does not return a policy.
    """
    source, _, attr = spec.rpartition(":")
    if not source or not attr.isidentifier():
        raise InputError(
            f"policy {spec!r}: give path/to/file.py:factory or module:factory "
            "(factory: a class or function returning a policy)"
        )
    module = _load_module(source, spec)
    factory = getattr(module, attr, None)
    if not callable(factory):
        found = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise InputError(
            f"policy {spec!r}: {source} has no factory {attr!r} "
            f"(it defines: {', '.join(found) or 'nothing callable'})"
        )
    accepted: Mapping[str, inspect.Parameter]
    try:
        accepted = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature: pass everything
        accepted = {}
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        params = {k: v for k, v in params.items() if k != "timeout_s" or k in accepted}
        unknown = [k for k in params if k not in accepted]
        if unknown:
            raise InputError(
                f"policy {spec!r}: {attr} takes no setting "
                f"{', '.join('policy.' + k for k in unknown)}"
            )
    policy = _call_user_code(lambda: factory(**params), spec)
    if not callable(getattr(policy, "decide", None)):
        raise InputError(
            f"policy {spec!r}: {attr}(...) returned {type(policy).__name__}, not a policy "
            "(an object with a decide(view) method; subclass hpcpower.Policy)"
        )
    return policy


def _load_module(source: str, spec: str):
    import importlib
    import importlib.util
    import sys

    if not source.endswith(".py"):
        try:
            return _call_user_code(lambda: importlib.import_module(source), spec)
        except ModuleNotFoundError as exc:
            raise InputError(f"policy {spec!r}: no module {exc.name!r}") from None
    path = Path(source)
    if not path.is_file():
        raise InputError(f"policy {spec!r}: no such file {path}")
    name = f"hpcpower_user_policy_{abs(hash(str(path.resolve())))}"
    loader = importlib.util.spec_from_file_location(name, path)
    if loader is None or loader.loader is None:
        raise InputError(f"policy {spec!r}: {path} cannot be loaded as Python")
    module = importlib.util.module_from_spec(loader)
    # Its folder first on the path, so that it can import its neighbours.
    sys.path.insert(0, str(path.resolve().parent))
    try:
        _call_user_code(lambda: loader.loader.exec_module(module), spec)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _call_user_code(run: Callable[[], Any], spec: str) -> Any:
    """Run a user's code; an exception in it becomes one line naming its file and line."""
    from hpcpower.errors import HpcpowerError

    try:
        return run()
    except (HpcpowerError, ModuleNotFoundError):
        raise
    except Exception as exc:
        raise user_code_error(exc, spec) from exc


def user_code_error(exc: Exception, spec: str, when: str = "") -> InputError:
    """One line for an exception raised in the code of policy ``spec``: its file, line and error.

    ``when`` is added after the error (``" at t=30 s"``).
    """
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename:
        # (Raised by the compiler, not in a frame of the file itself.)
        return InputError(
            f"policy {spec!r}: {exc.filename}:{exc.lineno}: SyntaxError: {exc.msg}{when}"
        )
    frames = traceback.extract_tb(exc.__traceback__)
    # The innermost frame outside hpcpower and Python's import machinery:
    # where the user's code failed.
    package = str(Path(__file__).resolve().parents[1])
    outside = [
        f
        for f in frames
        if not f.filename.startswith("<")
        and not str(Path(f.filename).resolve()).startswith(package)
    ]
    where = f"{outside[-1].filename}:{outside[-1].lineno}" if outside else spec
    return InputError(f"policy {spec!r}: {where}: {type(exc).__name__}: {exc}{when}")
