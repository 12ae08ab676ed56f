"""Scoring: dynamic ground truth, error channels, statistics and reports."""
