"""Where a verdict is decided: the statistics (stats.py), sequential stopping (sequential.py,
repeat.py), the regression gate and its rules (gate.py), the baseline's samples and the
comparisons made with them (baseline.py), drift between sessions (drift.py), change points across
sessions (changes.py), absolute thresholds (thresholds.py) and the session's results for
assertions (assertions.py). It may import measure/ (the cache check's figures), store/ and the
ground, never a view or a guest: what it needs of a run is in the store."""
