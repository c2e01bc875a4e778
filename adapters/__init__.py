"""Everything that talks to a model or provider; reports facts, decides nothing."""

import os

# llama.cpp and CTranslate2 run on OpenMP. Its default lets idle worker threads spin, and on two cores shared by
# Whisper, llama.cpp and Piper a spinning pool starves the others (a llama.cpp prefill ran 5x slower next to a
# busy core). Passive waiting must be set before the first OpenMP runtime loads, so here, before any adapter.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
