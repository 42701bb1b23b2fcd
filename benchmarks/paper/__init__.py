"""The paper's experiments (Tables 1-3): models, training, the protocols and the report."""
