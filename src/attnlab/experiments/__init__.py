"""Experiments whose results the lecture shows (``python -m attnlab length``, ``language``)."""
