"""The command line: thin wrappers over the hosts."""
