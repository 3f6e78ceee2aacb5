"""The Spark job (`kdissect spark`): captures in, Parquet tables out, on the same core as the CLI.

Modules, in the order data flows: inputs (what was named), splits (the byte ranges of capture/ranges.py, planned
on Spark), reader and blobs (packets to one row per connection key per range), source (the Spark data source),
core (the streaming pass over the CLI's core), rows and tables (the tables' columns), job (the stages),
session (starting Spark), command (the CLI command's body). Only source, job and session import pyspark.
docs/pipeline.md describes the tables and how to run on a cluster.
"""
