"""Fixed-size pages of file data on local disk, bounded, checksummed, restored after restart."""
