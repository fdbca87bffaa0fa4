"""A process's background index runs and its models (the full model, the static tier)."""
