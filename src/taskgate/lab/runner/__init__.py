"""Running episodes: the pure episode loop and the batch ladder on top of it."""
