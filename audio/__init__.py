"""Capture, playback with the heard cursor, VAD, echo cancellation, barge-in and fixture devices."""
