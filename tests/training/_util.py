"""Shared constants of the training tests."""

#: hashed-mlp config small enough for sub-second epochs on the demo benchmark
TINY = {"dim": 2**10, "shared_dim": 2**8, "embed_dim": 8, "hidden": 16}
