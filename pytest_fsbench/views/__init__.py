"""Where a figure is drawn and a result shown: the terminal's tables (tables.py), the figures
(figures.py), the HTML report (report.py), a fleet's page (fleet_page.py) and the JSON export
(json_export.py). Views read the store and ask verdicts/ for comparisons; they may import
verdicts/, measure/ (the cache check's words), filesystems/ (names) and the ground, never a guest
module: whether a figure was emulated and under which kernel is in the stored run."""
