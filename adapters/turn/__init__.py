"""End-of-turn adapters: Smart Turn v3.2 (ONNX, shipped inside the pipecat-ai wheel) behind `EndOfTurnModel`."""
