"""Performance benchmarks: speed, memory and scaling of compiled modules against peers."""
