"""Tokenising and packing corpus shards into the blocks pretraining reads (CPU jobs, shared by models)."""
