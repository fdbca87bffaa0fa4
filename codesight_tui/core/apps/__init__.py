"""What a process runs on the engine: the Workspace every surface holds, and `codesight eval`."""
