"""The findings on Spark: one task per capture judges it whole (capture_pass.py, no rows), as `kdissect tables` does
in its one pass. The doctor's rules follow a capture across its connections, so a capture is not cut here: what
scales is the number of captures judged at once (docs/pipeline.md).

Nothing here imports pyspark: `FindingsStage(config)(batches)` takes batches of task numbers (`spark.range`) and
yields batches of finding rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from kdissect.pipeline.capture_pass import CapturePass
from kdissect.pipeline.findings import findings_batch
from kdissect.pipeline.reader import open_path


class FindingsStage:
    """Callable for `mapInArrow` over `spark.range(len(config["judged"]))`: row i judges capture `judged[i]`."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        judged = self.config["judged"]
        for batch in batches:
            for task in batch.column("id").to_pylist():
                file_id = judged[task]
                one = CapturePass(self.config, file_id, self.config["paths"][str(file_id)], None, judged=True)
                one.run(open_path)
                if one.findings:
                    yield findings_batch(one.findings)
