"""Everything that talks to a model or provider; reports facts, decides nothing."""

import os

# The thread settings below were chosen on measurements (figures: docs/decisions/0002).
# llama.cpp and CTranslate2 run on OpenMP. Its default lets idle worker threads spin, and on two cores shared by
# Whisper, llama.cpp and Piper a spinning pool starves the others. Passive waiting must be set before the first
# OpenMP runtime loads, so here, before any adapter.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Passive alone makes every barrier a futex sleep and wake-up, and a llama.cpp graph has hundreds of them, which
# slows a prompt step. A thousand spins covers a barrier's partner; a pool with no work still sleeps at once.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")
# numpy's OpenBLAS keeps a thread per core whose workers busy-wait for a while after every call before they sleep.
# Our BLAS calls are small (mel filterbanks, dot products), but after each one that spin took a core from Whisper,
# Smart Turn, llama.cpp and Piper just when a turn ends, and the first audio came later. It must be set before
# numpy loads: desktop imports us first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
