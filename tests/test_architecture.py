"""The house rules on imports between the parts of hpcpower, checked on the source.

The rules (docs/background/architecture.md explains them):

* no import circles, anywhere in the package;
* the engine imports nothing from policies, scenario, results or cli, not even
  inside a function;
* planning is a leaf: it imports only hpcpower.states, hpcpower.errors, its own
  modules, the standard library, numpy and numba;
* workload, platform, states and errors import nothing from engine, policies,
  planning, results, scenario or cli;
* results imports nothing from engine.simulation, policies, scenario or cli;
* policies see the engine only through its contract (engine.contract);
* experiments (sweeps and their reports) sit on the public API: nothing below
  the top imports them, and they never import the cli.

The import graph is read with ``ast`` from the files under ``hpcpower/``,
without importing anything. It holds every ``import`` and ``from ... import``
statement, at module level or inside a function, with relative imports
resolved; imports under ``if TYPE_CHECKING:`` are left out, as they never run.
``from pkg import name`` is an edge to the module ``pkg.name`` when there is
one, else to ``pkg``; importing a package is an edge to its ``__init__``. The
parent packages a submodule import loads on the way are not edges.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hpcpower"


# -- the graph ---------------------------------------------------------------


def module_files() -> dict[str, Path]:
    """Module name -> source file, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def is_type_checking(test: ast.expr) -> bool:
    """True for the test of ``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def import_statements(tree: ast.AST):
    """Yield every import statement of ``tree`` that can run (skipping TYPE_CHECKING blocks)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def imported_names(module: str, path: Path, modules: dict[str, Path]):
    """Yield (imported module, line) for each import in one module's source."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in import_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield (sub if sub in modules else base), node.lineno


@cache
def imports() -> tuple[tuple[str, str, str], ...]:
    """Every import in the package as (importer, imported, "file:line"), in file order."""
    modules = module_files()
    found = set()
    for module, path in modules.items():
        for name, line in imported_names(module, path, modules):
            found.add((str(path.relative_to(ROOT)), line, module, name))
    return tuple((module, name, f"{file}:{line}") for file, line, module, name in sorted(found))


@cache
def graph() -> dict[str, set[str]]:
    """The import graph within the package: module -> the hpcpower modules it imports."""
    edges: dict[str, set[str]] = {module: set() for module in module_files()}
    for importer, imported, _ in imports():
        if in_part(imported, "hpcpower"):
            edges[importer].add(imported)
    return edges


def in_part(module: str, *parts: str) -> bool:
    """True if ``module`` is one of ``parts`` or inside one of them."""
    return any(module == part or module.startswith(part + ".") for part in parts)


def path_between(edges: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A shortest import chain from ``start`` to ``goal`` (breadth first), or None."""
    came_from = {start: start}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        if node == goal:
            chain = [node]
            while chain[-1] != start:
                chain.append(came_from[chain[-1]])
            return chain[::-1]
        for nxt in sorted(edges.get(node, ())):
            if nxt not in came_from:
                came_from[nxt] = node
                todo.append(nxt)
    return None


def circles(edges: dict[str, set[str]]) -> list[str]:
    """Every import circle, one per import that closes one, as "a -> b -> a".

    An import a -> b lies on a circle exactly when a can be reached back from
    b (a and b are then in one strongly connected component); the circle shown
    is the shortest way back. Each circle is listed once, from its first name.
    """
    found = set()
    for a in sorted(edges):
        for b in sorted(edges[a]):
            back = path_between(edges, b, a)
            if back is None:
                continue
            ring = [a] + back[:-1]
            first = ring.index(min(ring))
            ring = ring[first:] + ring[:first]
            found.add(" -> ".join(ring + ring[:1]))
    return sorted(found)


def violations(importers: tuple[str, ...], allowed) -> list[str]:
    """Imports by modules in the parts ``importers`` that ``allowed(name)`` refuses."""
    modules = [m for m in module_files() if in_part(m, *importers)]
    assert modules, f"no modules found for {', '.join(importers)}: the rule checks nothing"
    return [
        f"{where}: {importer} imports {imported}"
        for importer, imported, where in imports()
        if in_part(importer, *importers) and not allowed(imported)
    ]


def report(title: str, lines: list[str]) -> str:
    return title + ":\n  " + "\n  ".join(lines)


# -- the rules ----------------------------------------------------------------


def test_no_import_circles():
    found = circles(graph())
    assert not found, report(f"{len(found)} import circle(s)", found)


def test_engine_does_not_import_policies_scenario_results_or_cli():
    def allowed(name: str) -> bool:
        return not in_part(
            name, "hpcpower.policies", "hpcpower.scenario", "hpcpower.results", "hpcpower.cli"
        )

    bad = violations(("hpcpower.engine",), allowed)
    assert not bad, report("the engine imports the parts above it", bad)


def test_planning_is_a_leaf():
    def allowed(name: str) -> bool:
        if in_part(name, "hpcpower"):
            return in_part(name, "hpcpower.planning", "hpcpower.states", "hpcpower.errors")
        top = name.partition(".")[0]
        return top in sys.stdlib_module_names or top in ("numpy", "numba")

    bad = violations(("hpcpower.planning",), allowed)
    assert not bad, report("planning imports more than states, errors, numpy and numba", bad)


def test_data_parts_import_nothing_above_them():
    above = (
        "hpcpower.engine",
        "hpcpower.policies",
        "hpcpower.planning",
        "hpcpower.results",
        "hpcpower.scenario",
        "hpcpower.cli",
    )
    lower = ("hpcpower.workload", "hpcpower.platform", "hpcpower.states", "hpcpower.errors")
    bad = violations(lower, lambda name: not in_part(name, *above))
    assert not bad, report("workload, platform, states or errors import a part above them", bad)


def test_results_do_not_import_the_simulation_or_policies():
    def allowed(name: str) -> bool:
        return not in_part(
            name,
            "hpcpower.engine.simulation",
            "hpcpower.policies",
            "hpcpower.scenario",
            "hpcpower.cli",
        )

    bad = violations(("hpcpower.results",), allowed)
    assert not bad, report("results import the simulation, policies, scenario or cli", bad)


def test_policies_see_the_engine_only_through_its_contract():
    def allowed(name: str) -> bool:
        if in_part(name, "hpcpower.engine"):
            return name == "hpcpower.engine.contract"
        return not in_part(name, "hpcpower.results", "hpcpower.scenario", "hpcpower.cli")

    bad = violations(("hpcpower.policies",), allowed)
    assert not bad, report("policies import the engine's mechanics or the parts above", bad)


def test_nothing_below_the_top_imports_experiments():
    below = (
        "hpcpower.engine",
        "hpcpower.policies",
        "hpcpower.planning",
        "hpcpower.results",
        "hpcpower.workload",
        "hpcpower.platform",
        "hpcpower.states",
        "hpcpower.errors",
        "hpcpower.scenario",
        "hpcpower.simulation",
    )
    bad = violations(below, lambda name: not in_part(name, "hpcpower.experiments"))
    assert not bad, report("a part below the top imports the experiments", bad)


def test_experiments_use_the_public_api_and_not_the_cli():
    def allowed(name: str) -> bool:
        if in_part(name, "hpcpower.engine", "hpcpower.planning", "hpcpower.cli"):
            return False
        if in_part(name, "hpcpower.policies"):
            return name == "hpcpower.policies.registry"
        return True

    bad = violations(("hpcpower.experiments",), allowed)
    assert not bad, report("experiments reach past the public API or import the cli", bad)
