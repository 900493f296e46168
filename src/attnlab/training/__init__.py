"""Training: batches, recipes, the one loop, checkpoints, scores."""
