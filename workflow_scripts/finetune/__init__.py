"""Fine-tuning: every model on every task type, every seed, scored as the papers score."""
