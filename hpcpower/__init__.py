"""hpcpower: simulate HPC clusters whose idle nodes can be powered down."""

__version__ = "0.1.0"
