"""fsbench: reproducible, gateable filesystem benchmarks as pytest tests."""

__version__ = "0.1.0"
