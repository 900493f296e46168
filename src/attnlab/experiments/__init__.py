"""Experiments whose results the lecture shows (``python -m attnlab.experiments.length``)."""
