"""`python -m reportgen.workloads.grpo`: run the GRPO workload with Relax-style flags."""

import sys

from reportgen.workloads.grpo.args import parse_args

if __name__ == "__main__":
    # Flags first, torch second: `--help` and flag errors answer without importing torch.
    _args = parse_args()
    from reportgen.workloads.grpo.train import run_args

    sys.exit(run_args(_args))
