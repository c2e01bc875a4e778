"""The Qt-free app model: the session (engine, voice, journal), its facts, and their plain words."""
