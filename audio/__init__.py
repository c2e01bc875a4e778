"""Audio I/O: microphone capture, playback with the "heard" cursor, Silero VAD, WebRTC echo cancellation,
barge-in detection, and fixture devices (WAV timeline source, recording sink, echo mixer) with the same protocols.

Import direction (SPEC §1): this package imports only `adapters.contract`, never the engine or Qt.
"""
