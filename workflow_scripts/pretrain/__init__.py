"""Masked-language-model pretraining: packed data, dynamic masking, the training loop, checkpoints."""
