"""The ``arena`` command-line interface of A2A Arena (an app; never imported by libs)."""

__version__ = "0.1.0"
