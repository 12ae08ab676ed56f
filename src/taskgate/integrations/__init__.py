"""Integrations with other people's agents and benchmarks (optional extras)."""
