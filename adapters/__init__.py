"""Everything that talks to a model or provider; reports facts, decides nothing."""

import os

# llama.cpp and CTranslate2 run on OpenMP. Its default lets idle worker threads spin, and on two cores shared by
# Whisper, llama.cpp and Piper a spinning pool starves the others (a llama.cpp prefill ran 5x slower next to a
# busy core). Passive waiting must be set before the first OpenMP runtime loads, so here, before any adapter.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Passive alone makes every barrier a futex sleep and wake-up, and a llama.cpp graph has hundreds of them: a
# 9-token prompt step took 77-114 ms on two threads against 35-45 ms with a short spin first (32 tokens 130-160
# against 85-103; Whisper, Smart Turn and a prefill beside a Whisper pass no slower). A thousand spins (~20 us)
# covers a barrier's partner; a pool with no work still sleeps at once.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")
# numpy's OpenBLAS keeps a thread per core whose workers busy-wait for a while after every call before they sleep.
# Our BLAS calls are small (mel filterbanks, dot products), but after each one that spin took a core from Whisper,
# Smart Turn, llama.cpp and Piper just when a turn ends: the first audio came ~50 ms later (fixture barge_in + echo
# and PulseAudio spoken turns, in separate processes). It must be set before numpy loads: desktop imports us first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
