"""Speech synthesis adapters: Piper behind the `Synthesizer` contract, and the pure text side of speaking.

Chunking (`chunker`), markup and emoji cleanup (`speakable`) and phonemes-to-words alignment (`alignment`).
"""
