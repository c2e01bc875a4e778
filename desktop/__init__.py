"""The application: command line and (later) the PySide6 window. The composition root lives here."""

import adapters  # noqa: F401  (first: its thread settings for OpenMP and OpenBLAS must precede numpy and the models)
