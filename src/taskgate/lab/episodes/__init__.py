"""The episode generator, its domain pools, and the records of a run log."""
