"""The package version (its own module, so reading it imports nothing else)."""

__version__ = "0.1.0"
