"""Text: vocabularies and tokens, the toy tasks, the real corpus, German compounds."""
