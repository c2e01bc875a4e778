"""Everything that talks to a model or provider; reports facts, decides nothing."""
