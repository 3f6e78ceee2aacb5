"""The tap: what `live --metrics` / `--otlp` and `read --metrics` export, made from the core's events.

`definitions.py` names every metric once (OpenTelemetry name, unit, kind, attributes, meaning); `budget.py` keeps
label values and series few (top-N first come, `other` for the rest, evicted when idle); `series.py` holds the
counters, histograms and gauges and takes snapshots of them; `tap.py` turns events into measurements, with a
doctor whose findings of the last window are the active ones; `prometheus.py` writes a snapshot as OpenMetrics
text, `serve.py` serves it over HTTP from the capture loop's snapshots, `otlp.py` pushes it over OTLP/HTTP.
"""
