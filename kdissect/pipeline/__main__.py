"""The job as a spark-submit application: the cluster manager's settings come from spark-submit.

    spark-submit --master yarn --deploy-mode client \
        "$(python -c 'import kdissect.pipeline.__main__ as m; print(m.__file__)')" \
        hdfs:///captures/2026-11-21/ --out hdfs:///kafka/tables

Same stages, tables and summary as `kdissect spark`, which is the way to run it without spark-submit.
"""

from __future__ import annotations

import argparse
import sys

from kdissect.pipeline.splits import DEFAULT_SPLIT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kdissect.pipeline", description="Dissect Kafka captures into tables on Spark.")
    parser.add_argument("captures", nargs="+", help="capture files, globs, directories or URIs")
    parser.add_argument("--out", required=True, help="directory (or URI) the tables are written under")
    parser.add_argument("--format", default="parquet", choices=["parquet", "orc", "json"])
    parser.add_argument("--port", type=int, action="append", help="a Kafka broker port (repeatable; default 9092)")
    parser.add_argument("--split-size", type=int, default=DEFAULT_SPLIT, help="bytes per range of a capture")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    from kdissect.pipeline.inputs import InputError
    from kdissect.pipeline.job import JobError, run
    from kdissect.pipeline.session import SparkUnavailable, start
    from kdissect.views.spark_summary import print_summary

    try:
        spark = start(None)
    except SparkUnavailable as exc:
        print(f"kdissect: error: {exc}", file=sys.stderr)
        return 2
    progress = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        ports = frozenset(args.port or [9092])
        totals = run(spark, args.captures, args.out, args.format, ports, split_size=args.split_size, progress=progress)
    except (InputError, JobError) as exc:
        print(f"kdissect: error: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print_summary(totals, args.out, totals.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
