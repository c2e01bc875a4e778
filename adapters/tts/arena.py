"""Piper's working memory, kept to what a reply's first words need: ONNX Runtime's arena otherwise keeps the
high-water mark of the longest phrase spoken so far (about 1.2 MB a character here: one 240-character phrase held
~290 MB for the rest of the session).

The voice's arena starts with one region sized for a first phrase, which is never shrunk, and every run ends by
freeing the regions it grew past it (ONNX Runtime's arena shrinkage). Those are allocated with mmap (glibc maps
anything above 32 MB), so freeing them gives the pages back to the system. Measured: three 236-character phrases
left +61 MB resident against +199 MB, and the first phrase after a long one ran as fast as before (56 ms), since
its memory is never handed back.
"""

from __future__ import annotations

import threading

import onnxruntime

# "Once upon a time," runs in 64 MB; a 45-character first phrase needs 96 MB (at 64 it faulted 20-40 MB back in)
FIRST_WORDS_BYTES = 96 << 20
# A first phrase as long as the chunker makes them (a clause of up to 7 words): speaking it at load touches the region
WARM_TEXT = "There was a lighthouse keeper named Barnaby,"
LONG_CHARS = 60  # a phrase past this leaves ~50 MB of freed heap behind it (glibc keeps it unless trimmed)
SHRINK = ("memory.enable_memory_arena_shrinkage", "cpu:0")  # a run's config: free the arena's idle regions after it

_registered = False
_lock = threading.Lock()


def use_kept_arena(options: onnxruntime.SessionOptions) -> None:
    """Run a session on the process's shared CPU arena (created once, its first region kept through shrinks), with
    the weights outside it so the whole first region is left for the phrases."""
    global _registered
    with _lock:
        if not _registered:
            memory = onnxruntime.OrtMemoryInfo(
                "Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onnxruntime.OrtMemType.DEFAULT
            )
            config = {"arena_extend_strategy": 0, "initial_chunk_size_bytes": FIRST_WORDS_BYTES}  # 0: powers of 2
            onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg(config))
            _registered = True
    options.add_session_config_entry("session.use_env_allocators", "1")
    options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
