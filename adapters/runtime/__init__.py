"""What every layer runs on, shared below the engine, the audio layer and the adapters: the task owner (tasks), the
thread owner (workers), the heap trim (heap), PCM conversion (pcm), private files and model-file lookup
(model_files). Code, not contract: adapters.contract keeps the protocols and value types."""
