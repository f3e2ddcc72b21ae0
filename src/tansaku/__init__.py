"""tansaku (探索): local-first search for your own documents."""

__version__ = "0.1.0"
