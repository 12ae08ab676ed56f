"""The pure core: task-state machine, receipts ledger, gate verdicts, validator. No I/O, no LLM."""
