"""The arms (rungs) of the state-coupling ladder, by name."""
