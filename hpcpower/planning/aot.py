"""The compiled twins built ahead of time: machine code that loads without numba.

Compiled just in time (:func:`hpcpower.planning.compiled.load`), the twins
cost every process numba's import and the start of its compiler, about
0.6 s and 130 MB, before they run at all. Built ahead of time, with
numba's ahead-of-time compiler (``numba.pycc``), they are one extension
module that binds in a few milliseconds (its guards made included) and
needs neither numba nor its compiler at run time. :func:`build` makes that module; a process whose
twins load (:func:`~hpcpower.planning.compiled.load`) takes it when one
was built from the same planning sources, and compiles just in time
otherwise.

Ahead of time a function is compiled for fixed argument types. :func:`build`
takes them from the twins compiled just in time while a caller-supplied
workout runs (``hpcpower build-kernels`` runs short simulations of every
policy on a small and a large machine), so each twin called from Python is
built for exactly the types Python calls it with. The built code checks no
type: each function is bound behind a guard that compares its arguments'
types (array dtype, dimensions and contiguity, scalar kinds, tuple
shapes) with the built ones, and calls the Python twin instead on any
difference (counted in :data:`fallbacks`). Twins the workout did not call
stay Python functions; helpers called only from other twins are compiled
into their callers (with numba's cache cold, the workout records their
types too, and they are built and bound as well). Either way the results
are the same floats.

The module and its manifest (the exported functions and their argument
types, as JSON) are named after a digest of every planning source, so an
edited source never binds code built from the old one; the manifest names
the numpy it was built against, and another numpy does not bind it either. They live in
:func:`folder`: ``$HPCPOWER_TWINS_DIR``, else the planning package's
``__pycache__``.

By default the module is built for the building machine's processor (its
model and instruction-set extensions, as numba's own compiler does), and
the manifest records :func:`host_key`; a process on another processor does
not bind it (it compiles just in time, or runs the numpy forms), so an
install shared by the nodes of a mixed cluster never runs instructions a
node lacks. ``portable=True`` builds for any processor of the
architecture instead, bound everywhere, at some cost in speed where loops
over many nodes gain from wider vector instructions.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: Calls that went to a Python twin because their argument types differ
#: from the built ones, by ``module.function`` (for tests and diagnostics).
fallbacks: dict[str, int] = {}

_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def folder() -> Path:
    """Where the built twins live: ``$HPCPOWER_TWINS_DIR``, else the package's ``__pycache__``."""
    given = os.environ.get("HPCPOWER_TWINS_DIR")
    if given:
        return Path(given)
    return Path(__file__).resolve().parent / "__pycache__"


def _stem(digest: str) -> str:
    return f"hpcpower_twins_{digest[:20]}"


def paths(digest: str, where: Path | None = None) -> tuple[Path, Path]:
    """The module and its manifest for planning sources of ``digest``."""
    base = folder() if where is None else where
    module = base / f"{_stem(digest)}{_SUFFIX}"
    return module, module.with_name(module.name + ".json")


#: Where the processor describes itself (Linux).
CPUINFO = "/proc/cpuinfo"


@functools.cache
def host_key() -> str | None:
    """This processor's identity: a digest of its architecture, model and instruction-set flags.

    Read from the first processor of :data:`CPUINFO` (once a process);
    ``None`` where there is none (then builds are portable).
    """
    model = flags = None
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as info:
            for line in info:
                if not line.strip():
                    break  # (the first processor's block is enough)
                field, _, value = line.partition(":")
                field = field.strip()
                if field == "model name":
                    model = value.strip()
                elif field in ("flags", "Features"):  # (x86, Arm)
                    flags = " ".join(sorted(value.split()))
    except OSError:
        return None
    if flags is None:
        return None
    text = f"{platform.machine()}|{model}|{flags}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _fits(manifest: dict) -> bool:
    """Whether this process can bind a build of this manifest (its numpy, a processor it fits)."""
    cpu = manifest.get("cpu")
    return manifest.get("numpy") == np.__version__ and (cpu is None or cpu == host_key())


def _manifest(digest: str) -> dict | None:
    """The manifest of the twins built from sources of ``digest``, if they and it are readable."""
    module, manifest = paths(digest)
    if not module.is_file():
        return None
    try:
        listed = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return listed if isinstance(listed, dict) else None


def misfit(digest: str) -> str | None:
    """What twins built from sources of ``digest`` in :func:`folder` were for, if not for here.

    ``None`` when there are none or they fit; else what they were built
    for, as a phrase (``"another processor"``, ``"numpy 1.26.4"``).
    """
    listed = _manifest(digest)
    if listed is None or _fits(listed):
        return None
    if listed.get("numpy") != np.__version__:
        return f"numpy {listed.get('numpy')}"
    return "another processor"


def available(digest: str) -> bool:
    """Whether twins built from sources of ``digest`` that bind here are in :func:`folder`."""
    listed = _manifest(digest)
    return listed is not None and _fits(listed)


def bind(digest: str, twins: list[Callable]) -> bool:
    """Put the built twins, behind their guards, in place of the Python ones.

    Each twin in ``twins`` that was built replaces its Python function under
    every name a planning module holds it by. Returns False (binding
    nothing) when no module built from ``digest`` is there, it was built
    against another numpy or for another processor, or it does not load.
    """
    manifest = _manifest(digest)
    if manifest is None or not _fits(manifest):
        # (None there, or built against another numpy's headers, or for
        # another processor whose instructions this one may lack.)
        return False
    module_path = paths(digest)[0]
    by_name = {f"{f.__module__}.{f.__qualname__}": f for f in twins}
    replacement: dict[int, Callable] = {}
    try:
        spec = importlib.util.spec_from_file_location(_stem(digest), module_path)
        if spec is None or spec.loader is None:
            return False
        built = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(built)
        for name, variants in manifest["functions"].items():
            python = by_name.get(name)
            if python is None:
                continue
            checked = [(getattr(built, export), _guard(types)) for export, types in variants]
            replacement[id(python)] = _guarded(name, python, checked)
    except (OSError, ImportError, ValueError, KeyError, TypeError, AttributeError):
        # (Unreadable, or a module and a manifest of two builds at once: not bound.)
        return False
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("hpcpower.planning."):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and id(value) in replacement:
                setattr(module, attr, replacement[id(value)])
    return True


def _guarded(name: str, python: Callable, checked: list[tuple[Callable, Callable]]) -> Callable:
    """The built function(s) of one twin behind their guards, the Python twin behind them all."""
    if len(checked) == 1:
        ((fast, check),) = checked

        def one(*args):
            if check(*args):
                return fast(*args)
            fallbacks[name] = fallbacks.get(name, 0) + 1
            return python(*args)

        one.__doc__ = python.__doc__
        one.__wrapped__ = python  # type: ignore[attr-defined]
        return one

    def many(*args):
        for fast, check in checked:
            if check(*args):
                return fast(*args)
        fallbacks[name] = fallbacks.get(name, 0) + 1
        return python(*args)

    many.__doc__ = python.__doc__
    many.__wrapped__ = python  # type: ignore[attr-defined]
    return many


# ------------------------------------------------------------------ guards
# An argument's type, as the manifest writes it: ["float"], ["int"],
# ["bool"], ["array", dtype, ndim] (C-contiguous), ["tuple", [types...]];
# anything else is ["other", text] and never matches.

_SCALARS = {
    "float": "(type({x}) is float or type({x}) is _np.float64)",
    "int": "((type({x}) is int or type({x}) is _np.int64) and type({x}) is not bool)",
    "bool": "(type({x}) is bool or type({x}) is _np.bool_)",
}


def _condition(kind: list, x: str, names: dict[str, Any]) -> str:
    """A Python expression true when ``x`` has the type ``kind``."""
    tag = kind[0]
    if tag in _SCALARS:
        return _SCALARS[tag].format(x=x)
    if tag == "array":
        dtype_name = f"_d{len(names)}"
        names[dtype_name] = np.dtype(kind[1])
        # (numpy's built-in dtypes are single objects: `is` is the quick test.)
        return (
            f"(type({x}) is _nd and ({x}.dtype is {dtype_name} or {x}.dtype == {dtype_name}) "
            f"and {x}.ndim == {kind[2]} and {x}.flags.c_contiguous)"
        )
    if tag == "tuple":
        parts = [f"type({x}) is tuple", f"len({x}) == {len(kind[1])}"]
        parts += [_condition(k, f"{x}[{i}]", names) for i, k in enumerate(kind[1])]
        return "(" + " and ".join(parts) + ")"
    return "False"


def _guard(types: list[list]) -> Callable[..., bool]:
    """A function of the arguments, true when they have ``types`` (made once, as code)."""
    names: dict[str, Any] = {"_np": np, "_nd": np.ndarray}
    args = [f"a{i}" for i in range(len(types))]
    body = " and ".join(_condition(k, a, names) for k, a in zip(types, args, strict=True))
    source = f"def check(*args):\n    if len(args) != {len(args)}:\n        return False\n"
    if args:
        source += f"    {', '.join(args)}{',' if len(args) == 1 else ''} = args\n"
    source += f"    return bool({body or 'True'})\n"
    exec(compile(source, "<twin guard>", "exec"), names)
    return names["check"]


def _kind(numba_type: Any) -> list:
    """The manifest's form of a numba argument type (see the guards above)."""
    from numba.core import types

    if isinstance(numba_type, types.Boolean):
        return ["bool"]
    if numba_type == types.float64:
        return ["float"]
    if numba_type == types.int64:
        return ["int"]
    if isinstance(numba_type, types.Array) and numba_type.layout == "C":
        return ["array", str(np.dtype(numba_type.dtype.name)), numba_type.ndim]
    if isinstance(numba_type, types.BaseTuple):
        members: tuple = getattr(numba_type, "types")  # noqa: B009  (numba's stubs lack it)
        return ["tuple", [_kind(t) for t in members]]
    return ["other", str(numba_type)]


def _read_only_arrays(numba_type: Any) -> int:
    """How many of the arrays in a type are read-only (built code never writes those)."""
    from numba.core import types

    if isinstance(numba_type, types.Array):
        return int(not numba_type.mutable)
    if isinstance(numba_type, types.BaseTuple):
        members: tuple = getattr(numba_type, "types")  # noqa: B009  (numba's stubs lack it)
        count = 0
        for member in members:
            count += _read_only_arrays(member)
        return count
    return 0


# ------------------------------------------------------------------ build
def build(
    workout: Callable[[], None],
    twins: list[Callable],
    dispatchers: dict[int, Any],
    digest: str,
    where: Path | None = None,
    *,
    portable: bool = False,
    say: Callable[[str], None] = lambda text: None,
) -> Path:
    """Compile every twin that ``workout`` calls from Python, ahead of time, into :func:`folder`.

    ``dispatchers`` maps each twin (by ``id``) to its just-in-time
    dispatcher, already in place; ``workout`` runs code that calls the
    twins, and each dispatcher then holds the argument types it was called
    with. One function is built per twin and set of types (read-only and
    writable arrays of one type share one: the flag changes nothing in
    built code that does not write them). The module and its manifest are
    written to a temporary folder and moved into place, manifest last, so
    a process never binds a half-written pair; builds from other sources
    in that folder are removed. ``portable`` builds for any processor of
    the architecture, not only this one's (see the module's notes).

    Returns the module's path.

    Raises:
        RuntimeError: numba has no ahead-of-time compiler, or building failed
            (no C compiler, no Python headers); the message says which.
    """
    try:
        from numba.pycc import CC
    except ImportError as exc:  # pragma: no cover - a numba without pycc, or no setuptools
        raise RuntimeError(
            f"numba's ahead-of-time compiler does not import ({exc}); it needs setuptools: "
            'pip install "hpcpower[fast]"'
        ) from None
    started = time.perf_counter()
    workout()
    say(f"workout done in {time.perf_counter() - started:.1f} s")
    functions: dict[str, list] = {}
    stem = _stem(digest)
    target = folder() if where is None else where
    with tempfile.TemporaryDirectory(prefix="hpcpower-twins-") as scratch:
        cc = CC(stem)
        cc.output_dir = scratch
        cc.verbose = False
        cpu = None if portable else host_key()
        if cpu is not None:
            # (numba.pycc's default is any processor of the architecture.)
            cc.target_cpu = "host"
        for twin in twins:
            dispatcher = dispatchers.get(id(twin))
            if dispatcher is None or not dispatcher.signatures:
                continue
            best: dict[str, Any] = {}  # guard types (as JSON) -> the signature built for them
            for signature in dispatcher.signatures:
                kinds = json.dumps([_kind(t) for t in signature])
                kept = best.get(kinds)
                if kept is None or _read_only_arrays(signature) > _read_only_arrays(kept):
                    best[kinds] = signature
            name = f"{twin.__module__}.{twin.__qualname__}"
            for k, (kinds, signature) in enumerate(best.items()):
                export = f"{twin.__module__.rsplit('.', 1)[-1]}__{twin.__name__}__{k}"
                result = dispatcher.overloads[signature]
                cc.export(export, result.signature)(twin)
                functions.setdefault(name, []).append([export, json.loads(kinds)])
        say(f"compiling {sum(map(len, functions.values()))} functions ahead of time ...")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (numba marks pycc as deprecated)
            try:
                cc.compile()
            except ImportError as exc:
                raise RuntimeError(
                    f'building the twins needs setuptools ({exc}): pip install "hpcpower[fast]"'
                ) from None
            except Exception as exc:
                raise RuntimeError(
                    f"building the twins failed ({type(exc).__name__}: {exc}); it needs a C "
                    "compiler (gcc or clang) and Python's headers"
                ) from None
        module, manifest = paths(digest, target)
        target.mkdir(parents=True, exist_ok=True)
        staged = target / f".{module.name}.{os.getpid()}"
        shutil.copyfile(Path(scratch) / module.name, staged)
        os.replace(staged, module)
        staged = target / f".{manifest.name}.{os.getpid()}"
        listed = {"digest": digest, "numpy": np.__version__, "cpu": cpu, "functions": functions}
        staged.write_text(json.dumps(listed, indent=1))
        os.replace(staged, manifest)
        # Builds from other sources can never be bound again: let them go.
        for old in target.glob(f"hpcpower_twins_*{_SUFFIX}*"):
            if old.name not in (module.name, manifest.name):
                old.unlink(missing_ok=True)
    say(f"built {module} in {time.perf_counter() - started:.1f} s")
    return module
