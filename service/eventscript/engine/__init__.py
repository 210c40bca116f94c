"""The engine: runs a compiled program over events, one instance context per group key."""
