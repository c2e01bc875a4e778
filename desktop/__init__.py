"""The application: command line and (later) the PySide6 window. The composition root lives here."""
