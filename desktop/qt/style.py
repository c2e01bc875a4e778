"""Colours and the one style sheet, so the widgets stay free of styling details."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QObject

INK = "#1f2933"
MUTED = "#6b7280"
UNHEARD = "#9ca3af"
ACCENT = "#2563eb"

CHIP_COLOURS = {
    "Ready": ("#e5e7eb", "#374151"),
    "Listening": ("#dcfce7", "#166534"),
    "Transcribing": ("#ccfbf1", "#115e59"),
    "Thinking": ("#ede9fe", "#5b21b6"),
    "Speaking": ("#dbeafe", "#1e40af"),
    "Stopping…": ("#fef3c7", "#92400e"),
    "Retrying": ("#fef3c7", "#92400e"),
    "Failed": ("#fee2e2", "#991b1b"),
}

SHEET = f"""
QMainWindow, QDialog {{ background: #f5f6f8; }}
QWidget {{ color: {INK}; font-size: 10.5pt; }}
QWidget:disabled {{ color: {UNHEARD}; }}
QScrollArea#transcript, QWidget#transcriptBody {{ background: #f5f6f8; border: none; }}
QFrame#bubble_user {{ background: #dbeafe; border-radius: 12px; }}
QFrame#bubble_assistant {{ background: #ffffff; border: 1px solid #e5e7eb; border-radius: 12px; }}
QFrame#bubble_failed {{ background: #fff1f2; border: 1px solid #fecdd3; border-radius: 12px; }}
QLabel#who {{ color: {MUTED}; font-size: 9pt; font-weight: 600; }}
QLabel#note {{ color: {MUTED}; font-size: 9pt; font-style: italic; }}
QLabel#interrupted {{ background: #ffedd5; color: #9a3412; border-radius: 8px; padding: 1px 8px; font-size: 9pt; }}
QLabel#hint {{ color: {MUTED}; font-size: 9pt; }}
QPushButton#talk {{
    background: {ACCENT}; color: white; border: none; border-radius: 14px;
    font-size: 13pt; font-weight: 600; padding: 14px 28px; min-width: 220px;
}}
QPushButton#talk:pressed, QPushButton#talk:checked {{ background: #dc2626; }}
QPushButton#talk:disabled {{ background: #9ca3af; }}
QLineEdit#message {{
    background: white; border: 1px solid #d1d5db; border-radius: 10px; padding: 8px 10px;
}}
QLineEdit#message:focus {{ border: 1px solid {ACCENT}; }}
QProgressBar#level {{ background: #e5e7eb; border: none; border-radius: 4px; max-height: 8px; }}
QProgressBar#level::chunk {{ background: #22c55e; border-radius: 4px; }}
QFrame#banner_error {{ background: #fef2f2; border: 1px solid #fecaca; border-radius: 10px; }}
QFrame#banner_info {{ background: #eff6ff; border: 1px solid #bfdbfe; border-radius: 10px; }}
QFrame#loading {{ background: #f0fdf4; border: 1px solid #bbf7d0; border-radius: 10px; }}
QTreeWidget#trace {{ background: white; border: 1px solid #e5e7eb; border-radius: 10px; font-size: 9pt; }}
QLabel#panelTitle {{ color: {MUTED}; font-weight: 600; }}
QLabel#welcome {{ color: {MUTED}; font-size: 11pt; padding: 40px; }}
"""


W = TypeVar("W", bound=QObject)


def named(widget: W, name: str) -> W:
    """Give a widget the object name the style sheet addresses it by."""
    widget.setObjectName(name)
    return widget
