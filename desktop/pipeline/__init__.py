"""The one voice pipeline (devices, listening chain, speech, scenario player) for the window, `parley run`,
the bench and the self-test. No app, no Qt."""
