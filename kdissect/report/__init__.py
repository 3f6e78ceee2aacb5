"""`kdissect report`: a capture explained on one self-contained HTML page (docs/report.md).

A floor above the views: `collector.Collector` gathers, in the pass that feeds the doctor, `stats`' totals, timelines
on one time axis of fixed size (`axis.py`, `timelines.py`), the groups' swim lanes (`lanes.py`), the ladder's
episodes (`ladder.py`), the inventory (`inventory.py`) and an index of every exchange for the findings' evidence
(`index.py`); `page.py` writes them with the doctor's report as one HTML file, its scripts and style inlined
(`assets/`).
"""
