"""Queue policies: which waiting jobs start, and the plan for the rest."""
