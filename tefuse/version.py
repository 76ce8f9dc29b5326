"""tefuse's version, in a module of its own so that any layer can read it without importing
the package facade (tefuse/__init__.py imports every layer)."""
__version__ = "0.1.0"
