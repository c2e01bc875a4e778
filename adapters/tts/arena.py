"""Piper's working memory, kept to what a reply's first words need: ONNX Runtime's arena otherwise keeps the
high-water mark of the longest phrase spoken so far, hundreds of MB for the rest of the session after one long
phrase (figures: docs/decisions/0002).

The voice's arena starts with one region sized for a first phrase, which is never shrunk; the regions grown past
it are freed once nothing in them is used (ONNX Runtime's arena shrinkage, at the end of every run and once more
after each phrase, below). Those regions are at least 32 MB, which glibc always maps with mmap, so freeing them
gives the pages back to the system, and the first phrase after a long one runs as fast as before, since its
memory is never handed back.

The first region is sized by the arena's first request (96 MB, or more if that request is larger): the
synthesizer's preload speaks a first phrase so that this request is a first phrase's.

A run's shrink happens while its outputs are still alive, and the arena places them best-fit: in the smaller free
chunk, often a grown region's. That region then outlived run after run. So once a phrase is rendered and its
outputs are freed, `release_grown_regions` shrinks the arena again with a run that allocates nothing (about a
millisecond).
"""

from __future__ import annotations

import threading

import numpy as np
import onnxruntime
from onnx import TensorProto, helper

# What a first phrase of the chunker's length needs without faulting pages back in
FIRST_WORDS_BYTES = 96 << 20
# A first phrase as long as the chunker makes them (a clause of up to 7 words): speaking it at load touches the region
WARM_TEXT = "There was a lighthouse keeper named Barnaby,"
GROWTH_BYTES = 32 << 20  # glibc's largest mmap threshold: a region this big is mapped, and unmapped when freed
LONG_CHARS = 60  # a phrase past this leaves ~50 MB of freed heap behind it (glibc keeps it unless trimmed)
SHRINK = ("memory.enable_memory_arena_shrinkage", "cpu:0")  # a run's config: free the arena's idle regions after it

_registered = False
_lock = threading.Lock()
_releaser: onnxruntime.InferenceSession | None = None


def use_kept_arena(options: onnxruntime.SessionOptions) -> None:
    """Run a session on the process's shared CPU arena (created once, its first region kept through shrinks), with
    the weights outside it (ONNX Runtime still places its pre-packed copies of some in the arena)."""
    global _registered
    with _lock:
        if not _registered:
            memory = onnxruntime.OrtMemoryInfo(
                "Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, onnxruntime.OrtMemType.DEFAULT
            )
            config = {
                "arena_extend_strategy": 0,  # powers of 2
                "initial_chunk_size_bytes": FIRST_WORDS_BYTES,
                "initial_growth_chunk_size_bytes": GROWTH_BYTES,  # after a shrink growth restarts here, not at 2 MB
            }
            onnxruntime.create_and_register_allocator(memory, onnxruntime.OrtArenaCfg(config))
            _registered = True
    options.add_session_config_entry("session.use_env_allocators", "1")
    options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")


def release_grown_regions() -> None:
    """Free the arena's regions past the first one that nothing uses: call once a run's outputs are freed."""
    session = _releasing_session()
    options = onnxruntime.RunOptions()
    options.add_run_config_entry(*SHRINK)
    session.run(None, {"x": np.zeros(0, dtype=np.float32)}, options)


def _releasing_session() -> onnxruntime.InferenceSession:
    """A session on the shared arena that takes no chunk of it (see `_release_model`): none stays pinned."""
    global _releaser
    with _lock:
        session = _releaser
    if session is not None:
        return session
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # the caller's thread only: no pool to spin after each run
    options.inter_op_num_threads = 1
    use_kept_arena(options)
    session = onnxruntime.InferenceSession(_release_model(), sess_options=options, providers=["CPUExecutionProvider"])
    with _lock:
        _releaser = _releaser or session
        return _releaser


def _release_model() -> bytes:
    """Identity over a float tensor of any length; run on an empty one, its output needs no memory."""
    shape = [None]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "release",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return bytes(model.SerializeToString())
