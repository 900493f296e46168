"""Pictures: type sizes, canvases, heatmaps, diagrams, plots and the figures of pics/."""
