"""Controls shown beside the real models: the same architecture without pretraining, and
each task's score without any training."""
