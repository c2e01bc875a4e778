"""The voice pipeline: microphone → VAD → Whisper → engine → chunker → Piper → speaker, with barge-in."""
