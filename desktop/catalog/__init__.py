"""The model manager: a catalogue of recommended models (catalog.toml), downloads from Hugging Face through
huggingface_hub (desktop.catalog.download), where downloaded models live (store), which one the configuration uses
(choice), their speed measured here (probe) and `parley models` (command). Nothing downloads by itself."""
