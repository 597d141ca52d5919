"""Planning algorithms over arrays: the numpy form and the compiled twin of each, side by side.

A leaf of the package: it imports numpy, :mod:`hpcpower.states` and, only
when a simulation asks for the compiled twins, numba. One module per
algorithm:

* :mod:`.common` — the data both forms share (state values, tie-break ranks, EPS);
* :mod:`.select` — choosing the cheapest ``r`` nodes for a job;
* :mod:`.release` — the idle order and every node's release time (the release map);
* :mod:`.timelines` — per-node free intervals and the earliest gap for a job;
* :mod:`.easy` — the FCFS/EASY pass: dispatch, head reservation,
  backfilling, and the projection of the queue;
* :mod:`.gang` — a gang's nodes changing state (the engine's one step here);
* :mod:`.wakes` — IPM's wake rule over a plan's first appearances.

Each compiled twin follows its numpy form step by step (same candidate
starts, same float operations in the same order, same tie-breaks), so both
give the same results to the bit; ``tests/planning`` compares them. Which
form runs is a per-simulation setting (``Simulation(kernels=...)``);
:func:`hpcpower.planning.compiled.load` compiles the twins.
"""
