"""attnlab: a live lecture on attention."""
