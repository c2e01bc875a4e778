"""Banners: what is wrong and how to fix it (never a traceback), and model-loading progress."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from desktop.model.facts import ModelLoading, Problem, ProblemCleared, ProblemRaised

SETTINGS_KINDS = frozenset(
    {"auth", "unreachable", "missing_model", "no_engine", "config", "quota", "no_microphone", "no_speaker", "unheard"}
)


class Banner(QFrame):
    def __init__(self, problem: Problem, open_settings: Callable[[], None], dismiss: Callable[[str], None]) -> None:
        super().__init__()
        self.problem = problem
        self.setObjectName(f"banner_{problem.severity}")
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 8, 8, 8)
        self.label = QLabel(f"<b>{escape(problem.message)}</b><br>{escape(problem.fix)}")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        row.addWidget(self.label, 1)
        if problem.kind in SETTINGS_KINDS:
            settings = QPushButton("Open Settings")
            settings.clicked.connect(open_settings)
            row.addWidget(settings)
        close = QPushButton("Dismiss")
        close.setFlat(True)
        close.clicked.connect(lambda: dismiss(problem.kind))
        row.addWidget(close)


class LoadingStrip(QFrame):
    """An indeterminate progress bar while models load (several at once); the rest of the window stays usable."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("loading")
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 6, 14, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        self.bar.setFixedWidth(160)
        self.bar.setTextVisible(False)
        row.addWidget(self.label, 1)
        row.addWidget(self.bar)
        self.loading: list[str] = []
        self.hide()

    def show_progress(self, progress: ModelLoading) -> None:
        if progress.phase == "loading" and progress.label not in self.loading:
            self.loading.append(progress.label)
        elif progress.phase != "loading" and progress.label in self.loading:
            self.loading.remove(progress.label)
        if not self.loading:
            self.hide()
            return
        names = self.loading[0] if len(self.loading) == 1 else f"{', '.join(self.loading[:-1])} and {self.loading[-1]}"
        self.label.setText(f"Loading {names}… You can type already; Parley answers once it is loaded.")
        self.show()


class BannerArea(QWidget):
    def __init__(self, open_settings: Callable[[], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._open_settings = open_settings
        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(16, 8, 16, 0)
        self._column.setSpacing(6)
        self.loading = LoadingStrip()
        self._column.addWidget(self.loading)
        self.banners: dict[str, Banner] = {}

    def handle(self, event: Any) -> None:
        if isinstance(event, ProblemRaised):
            self.show_problem(event.problem)
        elif isinstance(event, ProblemCleared):
            self.dismiss(event.kind)
        elif isinstance(event, ModelLoading):
            self.loading.show_progress(event)

    def show_problem(self, problem: Problem) -> None:
        self.dismiss(problem.kind)
        banner = self.banners[problem.kind] = Banner(problem, self._open_settings, self.dismiss)
        self._column.addWidget(banner)

    def dismiss(self, kind: str) -> None:
        banner = self.banners.pop(kind, None)
        if banner is not None:
            banner.hide()
            banner.deleteLater()
