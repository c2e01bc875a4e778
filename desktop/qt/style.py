"""Colours and the one style sheet, so the widgets stay free of styling details."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QObject

INK = "#1f2933"
MUTED = "#6b7280"
UNHEARD = "#9ca3af"
ACCENT = "#2563eb"
FOCUS = "#1e3a8a"

CHIP_COLOURS = {
    "Ready": ("#e5e7eb", "#374151"),
    "Loading models…": ("#fef9c3", "#854d0e"),
    "Listening": ("#dcfce7", "#166534"),
    "Transcribing": ("#ccfbf1", "#115e59"),
    "Thinking": ("#ede9fe", "#5b21b6"),
    "Speaking": ("#dbeafe", "#1e40af"),
    "Stopping…": ("#fef3c7", "#92400e"),
    "Retrying": ("#fef3c7", "#92400e"),
    "Failed": ("#fee2e2", "#991b1b"),
}


def sheet(zoom: float = 1.0) -> str:
    """The style sheet at a zoom level (font sizes scale; Ctrl +/- in the window)."""

    def pt(size: float) -> str:
        return f"{size * zoom:.1f}pt"

    return f"""
QMainWindow, QDialog {{ background: #f5f6f8; }}
QWidget {{ color: {INK}; font-size: {pt(10.5)}; }}
QWidget:disabled {{ color: {UNHEARD}; }}
QScrollArea#transcript, QWidget#transcriptBody {{ background: #f5f6f8; border: none; }}
QFrame#bubble_user {{ background: #dbeafe; border-radius: 12px; }}
QFrame#bubble_assistant {{ background: #ffffff; border: 1px solid #e5e7eb; border-radius: 12px; }}
QFrame#bubble_failed {{ background: #fff1f2; border: 1px solid #fecdd3; border-radius: 12px; }}
QLabel#who {{ color: {MUTED}; font-size: {pt(9)}; font-weight: 600; }}
QLabel#note {{ color: {MUTED}; font-size: {pt(9)}; font-style: italic; }}
QLabel#interrupted {{ background: #ffedd5; color: #9a3412; border-radius: 8px; padding: 1px 8px; font-size: {pt(9)}; }}
QLabel#hint {{ color: {MUTED}; font-size: {pt(9)}; }}
QPushButton {{ background: white; border: 1px solid #d1d5db; border-radius: 8px; padding: 5px 12px; }}
QPushButton:hover {{ background: #f3f4f6; }}
QPushButton:pressed, QPushButton:checked {{ background: #e5e7eb; }}
QPushButton:disabled {{ background: #f9fafb; border-color: #e5e7eb; }}
QPushButton:focus {{ border: 2px solid {ACCENT}; padding: 4px 11px; }}
QPushButton#talk {{
    background: {ACCENT}; color: white; border: none; border-radius: 14px;
    font-size: {pt(13)}; font-weight: 600; padding: 14px 28px;
}}
QPushButton#talk:pressed, QPushButton#talk:checked {{ background: #dc2626; }}
QPushButton#talk:disabled {{ background: #9ca3af; }}
QLineEdit#message {{
    background: white; border: 1px solid #d1d5db; border-radius: 10px; padding: 8px 10px;
}}
QLineEdit#message:focus {{ border: 2px solid {ACCENT}; padding: 7px 9px; }}
QPushButton#talk:focus {{ border: 3px solid {FOCUS}; padding: 11px 25px; }}
QWidget#transcriptBody[focused="true"] {{ border: 2px solid {ACCENT}; border-radius: 8px; }}
QTreeWidget#trace:focus {{ border: 2px solid {ACCENT}; }}
QCheckBox:focus {{ border: 2px solid {ACCENT}; border-radius: 4px; padding: 2px; }}
QCheckBox {{ border: 2px solid transparent; padding: 2px; }}
QProgressBar#level {{ background: #e5e7eb; border: none; border-radius: 4px; max-height: 8px; }}
QProgressBar#level::chunk {{ background: #22c55e; border-radius: 4px; }}
QFrame#banner_error {{ background: #fef2f2; border: 1px solid #fecaca; border-radius: 10px; }}
QFrame#banner_info {{ background: #eff6ff; border: 1px solid #bfdbfe; border-radius: 10px; }}
QFrame#loading {{ background: #f0fdf4; border: 1px solid #bbf7d0; border-radius: 10px; }}
QTreeWidget#trace {{ background: white; border: 1px solid #e5e7eb; border-radius: 10px; font-size: {pt(9)}; }}
QLabel#panelTitle {{ color: {MUTED}; font-weight: 600; }}
QLabel#welcome {{ color: {MUTED}; font-size: {pt(11)}; padding: 40px; }}
"""


SHEET = sheet()


W = TypeVar("W", bound=QObject)


def named(widget: W, name: str) -> W:
    """Give a widget the object name the style sheet addresses it by."""
    widget.setObjectName(name)
    return widget
