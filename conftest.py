"""Repository-level pytest configuration. The fsbench plugin itself is loaded through its pytest11
entry point (pip install -e .); the benchmark cases live in benchmarks/."""
