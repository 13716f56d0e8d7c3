"""Policy: what to store, how to find it again, and the background work between the two."""
