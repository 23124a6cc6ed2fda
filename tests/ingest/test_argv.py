from reportgen.ingest.argv import (
    argv_to_mapping,
    check_invariants,
    dump_to_mapping,
    parse_argument_dump,
    parse_trace,
    split_words,
)

from .conftest import DUMP, TRACE


def test_trace_picks_workload_command():
    argv = parse_trace(TRACE)
    assert argv[:3] == ["python3", "-m", "relax.entrypoints.train"]
    assert "--address=http://127.0.0.1:8265" not in argv
    m = argv_to_mapping(argv)
    assert m["--global-batch-size"] == "16"
    assert m["--colocate"] is True
    assert m["--prompt-template"] == "Think step by step: {q}"
    assert m["--eval-datasets"] == ["a.parquet", "b.parquet"]
    assert m["--lr"] == "1e-6"
    assert m["--loss-scale"] == "-1"
    assert "-m" not in m


def test_trace_entrypoint_and_absent():
    text = "+ python3 -m prep.tool --x 1\n+ python3 -m relax.entrypoints.train --y 2\n+ echo done\n"
    assert parse_trace(text, "prep.tool") == ["python3", "-m", "prep.tool", "--x", "1"]
    assert parse_trace(text) == ["python3", "-m", "relax.entrypoints.train", "--y", "2"]
    assert parse_trace("no trace here\n") is None
    assert parse_trace("+ python3 -m a --x 'open quote\n") is None


def test_bash_quoting():
    assert split_words("a 'b c' 'it'\\''s' $'x\\ny' \"q \\\"r\\\"\" d\\ e") == [
        "a",
        "b c",
        "it's",
        "x\ny",
        'q "r"',
        "d e",
    ]


def test_argument_dump():
    d = parse_argument_dump("noise\n" + DUMP + "more noise\n")
    assert d["--global-batch-size"] == "16"
    assert d["--a-very-long-argument-name-that-has-no-dots-at-all"] == "7"
    assert d["--eval-datasets"] == "['a.parquet', 'b.parquet']"
    m = dump_to_mapping(d)
    assert m["--use-precision-aware-optimizer"] is False
    assert parse_argument_dump("nothing") == {}


def test_mapping_forms():
    m = argv_to_mapping(["python", "train.py", "pos", "--a=1", "--b", "x", "y", "--c", "-0.5", "--d", "--a", "3"])
    assert m == {"--a": "3", "--b": ["x", "y"], "--c": "-0.5", "--d": True, "_args": ["pos"]}


def test_invariants():
    m = argv_to_mapping(parse_trace(TRACE))
    flags = ["--global-batch-size", "--n-samples-per-prompt", "--rollout-temperature", "--seed", "--eval-datasets"]
    r = check_invariants(m, flags, None)
    assert r["checked"] == flags and r["violations"] == []
    assert r["values"]["--seed"] is None and r["values"]["--global-batch-size"] == "16"
    expected = {
        "--global-batch-size": ("16",),
        "--n-samples-per-prompt": "4",
        "--rollout-temperature": "0.80",
        "--seed": None,
        "--eval-datasets": "[a.parquet, b.parquet]",
    }
    r = check_invariants(m, flags, expected)
    assert r["violations"] == [{"flag": "--n-samples-per-prompt", "expected": "4", "actual": "8"}]
    r = check_invariants(m, ["--seed"], {"--seed": "1234"})
    assert r["violations"] == [{"flag": "--seed", "expected": "1234", "actual": None}]
    dump = dump_to_mapping(parse_argument_dump(DUMP))
    assert (
        check_invariants(dump, ["--eval-datasets"], {"--eval-datasets": ["a.parquet", "b.parquet"]})["violations"] == []
    )
