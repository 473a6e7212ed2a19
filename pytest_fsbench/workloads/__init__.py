"""Workloads: pure argv builders and output parsers, one module per tool."""
