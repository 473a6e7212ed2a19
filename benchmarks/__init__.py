"""fsbench's benchmark cases: run them with pytest benchmarks/ in a checkout, or
pytest --pyargs pytest_fsbench.benchmarks where fsbench is installed."""
