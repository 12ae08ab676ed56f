"""The paper's experiments beyond the ladder, one folder each: the probe (:mod:`.probe`), the
one-node case (:mod:`.onenode`), the wording study (:mod:`.wording`), PM-Bench (:mod:`.pmbench`)
and the tau2 study (:mod:`.tau2`)."""
