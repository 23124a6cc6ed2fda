"""`python -m reportgen.workloads.grpo`: run the GRPO workload with Relax-style flags."""

import sys

from reportgen.workloads.grpo.args import parse_args

if __name__ == "__main__":
    # Flags first, torch second: `--help` and flag errors answer without importing torch.
    _args = parse_args()
    from reportgen.workloads.grpo.distributed import is_worker

    if _args.num_gpus > 1 and not is_worker():
        # The launcher: start one worker per device with the same flags, import no torch here.
        from reportgen.workloads.grpo.distributed import launch

        sys.exit(launch(sys.argv[1:], _args.num_gpus))
    from reportgen.workloads.grpo.train import run_args

    sys.exit(run_args(_args))
