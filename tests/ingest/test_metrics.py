import math

import numpy as np
import pandas as pd
import pytest

from reportgen.ingest.console import ConsoleParser
from reportgen.ingest.metrics import console_frame, merge_sources, read_metrics, write_metrics
from reportgen.ingest.tensorboard import read_scalars
from reportgen.store.run import wide_table

from .conftest import relax_stdout, step_time


def write_tb(d, rows):
    """Real event files, written the way SummaryWriter.add_scalar does (float32 simple_value);
    tensorboard's own writer avoids importing torch (seconds) in a fast test."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(d))
    for i, (key, value, step) in enumerate(rows):
        summary = Summary(value=[Summary.Value(tag=key, simple_value=value)])
        w.add_event(Event(wall_time=1_800_000_000.0 + i, step=step, summary=summary))
    w.close()


@pytest.fixture
def console_df():
    p = ConsoleParser()
    return console_frame(p.feed(relax_stdout()) + p.close())


def test_console_frame_merges_both_perf_lines(console_df):
    step2 = console_df[console_df.step == 2].set_index("key")["value"]
    assert step2["perf/step_time"] == step_time(2)  # actor's perf line
    assert step2["perf/rollout_time"] == 14.5  # rollout manager's perf line, same step
    assert not any(k.startswith("rollout/meta") for k in console_df.key)  # strings are not metrics
    assert "passrate/x" not in set(console_df.key)


def test_tensorboard_merge_and_disagreement(tmp_path, console_df):
    tb = tmp_path / "tensorboard" / "proj" / "exp"  # Relax's tensorboard_log/<project>/<experiment> layout
    rows = [("perf/step_time", step_time(s), s) for s in range(9)]
    rows[4] = ("perf/step_time", 99.0, 4)  # disagrees with the console's 32.0
    rows += [("train/grad_norm", float("nan"), 3), ("tb/only", 7.0, 1)]
    write_tb(tb, rows)
    tb_df = read_scalars(tmp_path / "tensorboard")
    assert list(tb_df.columns) == ["step", "key", "value"] and len(tb_df) == 11
    long_df, notes = merge_sources(console_df, tb_df)
    assert notes == [
        {"step": 4, "key": "perf/step_time", "chosen": "console", "values": {"console": 32.0, "tensorboard": 99.0}}
    ]  # float32 31.2 vs 31.2 is not a disagreement
    assert set(long_df.source) == {"console", "tensorboard"}
    wide = wide_table(long_df)
    assert wide.loc[4, "perf/step_time"] == 32.0
    assert wide.loc[1, "tb/only"] == 7.0
    assert math.isnan(wide.loc[3, "train/grad_norm"])
    assert wide_table(long_df, priority=("tensorboard", "console")).loc[4, "perf/step_time"] == 99.0
    assert wide.index.dtype == np.int64 and list(wide.index) == sorted(wide.index)
    assert all(dt == np.float64 for dt in wide.dtypes)


def test_duplicate_key_within_console_is_recorded():
    df = pd.DataFrame({"step": [1, 1, 2, 2], "key": ["a", "a", "b", "b"], "value": [1.0, 2.0, np.nan, np.nan]})
    long_df, notes = merge_sources(df, None)
    assert notes == [{"step": 1, "key": "a", "chosen": "console", "values": {"console": [1.0, 2.0]}}]
    assert long_df[long_df.key == "a"]["value"].tolist() == [2.0]


def test_parquet_round_trip(tmp_path, console_df):
    long_df, _ = merge_sources(console_df, None)
    write_metrics(tmp_path, long_df)
    back = read_metrics(tmp_path)
    assert list(back.columns) == ["step", "key", "value", "source"]
    assert len(back) == len(long_df)
    assert back[back.key == "perf/actor_train_tflops"]["value"].tolist() == [math.inf] * 9
    assert read_metrics(tmp_path / "nowhere").empty
    assert wide_table(read_metrics(tmp_path / "nowhere")).empty
