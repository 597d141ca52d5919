"""Scheduling mechanics: nodes, cluster, queue and the simulation loop."""
