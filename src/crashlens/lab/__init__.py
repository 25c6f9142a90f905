"""Offline tooling, never on the `analyze` path: the labelled corpus, evaluation and training."""
