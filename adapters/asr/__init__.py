"""Speech recognition adapters: faster-whisper behind the `Transcriber` contract, WAV loading, resampling."""
