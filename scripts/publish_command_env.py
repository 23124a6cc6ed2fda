"""Cut the environment kept in old runs' command.json to what may be published, in place.

Until the runner wrote command.json through `reportgen.capture.redact.published_env` (the
allow-list: the frameworks' variables and the recipe's own), it kept the machine's whole
environment there: on the lent GPU machines 105 variables, among them OLDPWD, CONTAINER_NAME and
the image's NV_* package names. The site's loader cuts every run's environment by the same rule
whatever its age, so no page shows them; this script makes the files in runs/ say no more than the
pages, so that nothing of the machine's environment stays in a committed run folder either. Each
command.json is rewritten through its model (schema 1, written atomically) with the environment
`reportgen.render.load.published_command` gives, `env_total` (how many variables the run had)
kept; the command and its working folder are left as they are. A file already cut is left byte for
byte. command.json is not an input of the analysis (its digest), so no analysis goes stale.

    PYTHONPATH=. python scripts/publish_command_env.py                    # every experiment under runs/
    PYTHONPATH=. python scripts/publish_command_env.py runs/aa-1xh200-grpo
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.render.load import published_command, read_spec_env, spec_env_names
from reportgen.store import layout
from reportgen.store.experiment import load_experiment_record
from reportgen.store.models import RunCommand


def publish_experiment(exp_dir: Path, *, write: bool = True) -> list[Path]:
    """Rewrite each run's command.json of `exp_dir` whose environment holds more than may be
    published (or that predates command.json's schema); returns those files (`write=False`: only
    names them)."""
    spec = exp_dir / layout.EXPERIMENT_SPEC
    own = spec_env_names(spec.read_text()) if spec.is_file() else set()
    record = load_experiment_record(exp_dir)
    spec_env = read_spec_env(spec, record.profile if record is not None else None)
    written = []
    for arm, _repeat, run_dir in layout.iter_runs(exp_dir):
        path = run_dir / layout.COMMAND
        stored = RunCommand.read(path)
        if stored is None:
            continue
        shown = published_command(stored, run_dir, arm, own, spec_env)
        assert shown is not None
        new = RunCommand.create(
            {"command": shown.command, "cwd": shown.cwd, "env": shown.env, "env_total": shown.env_total}
        )
        if json.loads(path.read_bytes()) != new.to_dict():  # cut already, in today's schema: left as it is
            if write:
                new.write(path)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiments", nargs="*", type=Path, help="experiment folders (default: all under runs/)")
    args = parser.parse_args(argv)
    folders = args.experiments or list(layout.iter_experiments(Path("runs")))
    total = 0
    for exp in folders:
        done = publish_experiment(exp)
        total += len(done)
        print(f"{exp}: {len(done)} command.json rewritten")
    print(f"{total} files rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
