"""Audio I/O: microphone capture, playback with the "heard" cursor, Silero VAD, WebRTC echo cancellation,
barge-in detection, and fixture devices (WAV timeline source, recording sink, echo mixer) with the same protocols;
on top of them, in `audio.turns`, turn-taking.

Import direction (SPEC §1): the devices and signal processing import only the adapters' contract and runtime,
never the engine, the app, Qt or `audio.turns`; `audio.turns` reads only the engine's value types.
"""
