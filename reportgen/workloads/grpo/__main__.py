"""`python -m reportgen.workloads.grpo`: run the GRPO workload with Relax-style flags."""

import sys

from reportgen.workloads.grpo.train import run

if __name__ == "__main__":
    sys.exit(run())
