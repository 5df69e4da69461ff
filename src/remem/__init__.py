"""remem: local semantic memory for the command line."""

__version__ = "0.1.0"
