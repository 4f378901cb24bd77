"""Vocabulary learning (BPE, WordPiece, SentencePiece) and the diagnostics that compare vocabularies."""
