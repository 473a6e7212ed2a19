"""The one place that stores results: sessions, runs, their figures and the facts each was
measured under (results.py: `Store`), in SQLite or the team's PostgreSQL (databases.py: how each
is opened, migrated and named). It imports only the ground (`errors`, `metrics`, `sizes`); every
view, verdict and measurement reads and writes through it."""

from .results import Series, SeriesKey, Store, StoreError

__all__ = ["Series", "SeriesKey", "Store", "StoreError"]
