"""Storage and the machinery under it: SQLite, LanceDB, BM25 from memory, the file watcher, worker processes."""
