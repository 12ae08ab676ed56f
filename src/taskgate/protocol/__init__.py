"""The text protocol: booking lines, refusal language, and the paper's rendered strings."""
