"""Files to text and chunks: the walk, documents, tree-sitter chunks and symbols, token counts, paths."""
