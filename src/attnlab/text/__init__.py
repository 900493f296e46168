"""Text: vocabularies and tokens, the toy tasks, the real corpus, subword units and near-twins."""
