"""The models: the base class, the RNNs, the Transformer, how to build one by kind."""
