"""Version numbers that enter fingerprints and result records."""

__version__ = "0.1.0"

#: Version of the on-disk benchmark format (Parquet columns, manifest layout).
#: Bump it whenever the bytes a build writes could change for the same inputs.
DATA_FORMAT_VERSION = 1
