"""Indexing and embedding: the phases of an index run, the index on disk, the models' encoders, the embedding cache."""
