"""The commands, one module per group; ``cli.main`` imports each only when it runs."""
