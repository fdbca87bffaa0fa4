"""The engine: walk -> chunk -> embed -> store -> search. It never imports textual."""
