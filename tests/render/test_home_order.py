"""The reports list and the home page (render/home_page.py): campaigns of one spec told apart by what
differs between them, in the order a reader wants (issue 46.6: r2, r3 and r4 under one title, the
CPU demo first)."""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.render import home_page
from reportgen.render.load import load_experiment
from tests.render import site_fixture

SHOWCASES = ("showcase-1xh200-grpo-offload-r2", "showcase-1xh200-grpo-offload-r3", "showcase-1xh200-grpo-offload-r4")


def test_the_three_one_h200_campaigns_are_told_apart_and_the_decided_come_first(committed_runs: Path) -> None:
    exps = [load_experiment(p) for p in sorted(committed_runs.iterdir()) if (p / "analysis.json").is_file()]
    told = home_page.distinctions(exps)
    assert {k: told[k] for k in SHOWCASES} == {
        "showcase-1xh200-grpo-offload-r2": "workload v1, one machine, fixed design, 2 pairs",
        "showcase-1xh200-grpo-offload-r3": "workload v1, one machine, sequential, 3 pairs",
        "showcase-1xh200-grpo-offload-r4": "workload v1, 2 machines, sequential, 3 pairs",
    }
    # the learning workload's campaign (v2, on one H100) shares their title: its version tells it apart
    assert told["showcase-1xh100-grpo-learning"] == "workload v2, one machine, sequential, decided after 4 pairs"
    assert "aa-1xh200-grpo" not in told  # a title of its own needs nothing
    # The one campaign with every candidate decided (v2: A1 accepted on both halves, A2 failed, A3
    # rejected) comes first; no committed v1 campaign has every candidate decided (A1's reward is flat
    # at 0, its quality half cannot be tested): the newest first after it
    assert [e.name for e in home_page.ordered(exps)] == [
        "showcase-1xh100-grpo-learning",
        "showcase-1xh200-grpo-offload-r4",
        "showcase-1xh200-grpo-offload-r3",
        "showcase-1xh200-grpo-offload-r2",
        "showcase-2xh200-grpo-offload",
        "aa-1xh200-grpo",
    ]
    md = home_page.render(exps).markdown
    assert "cap) — workload v1, 2 machines, sequential, 3 pairs](showcase-1xh200-grpo-offload-r4/index.md)" in md
    results = home_page.results(exps)
    assert results.index("r4/index.md") < results.index("r3/index.md") < results.index("r2/index.md")


def test_a_cpu_demo_comes_after_the_gpu_reports_however_new(tmp_path: Path) -> None:
    site_fixture.build_experiment(tmp_path, "showcase-a100-grpo", seed=1)
    site_fixture.build_experiment(tmp_path, "grpo-demo")
    demo = tmp_path / "grpo-demo"
    doc = json.loads((demo / "analysis.json").read_text())
    doc["machine"]["gpus"] = []
    doc["experiment"]["created_utc"] = "2030-01-01T00:00:00Z"  # the newest of all
    (demo / "analysis.json").write_text(json.dumps(doc))
    for fp in demo.rglob("fingerprint.json"):
        fp.write_text(json.dumps({**json.loads(fp.read_text()), "gpus": []}))
    exps = [load_experiment(tmp_path / n) for n in ("grpo-demo", "showcase-a100-grpo")]
    assert [e.name for e in home_page.ordered(exps)] == ["showcase-a100-grpo", "grpo-demo"]


def test_campaigns_nothing_else_tells_apart_are_named_by_their_folder(tmp_path: Path) -> None:
    site_fixture.build_experiment(tmp_path, "exp-one")
    site_fixture.build_experiment(tmp_path, "exp-two")
    exps = [load_experiment(tmp_path / n) for n in ("exp-one", "exp-two")]
    assert home_page.distinctions(exps) == {"exp-one": "exp-one", "exp-two": "exp-two"}
