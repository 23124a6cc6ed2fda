"""Write the bytecode of reportgen and of the tests once, before `scripts/test` starts its workers.

    python scripts/warm_bytecode.py [ROOT]

In a fresh clone no `__pycache__` exists, and the suite's pytest-xdist workers (twice the cores) all
start at once: each compiled reportgen and rewrote every test module's asserts itself (pytest caches
a rewritten module only after it made it), about 4 CPU-seconds a worker that one process spends once
here (docs/testing.md, "Where the time goes now"). The rewritten modules are written
where and as pytest writes them (`__pycache__/NAME.<tag>-pytest-<version>.pyc`, checked by the
source's hash), with pytest's own functions; those are not public API, so if they are not there
(another pytest) the tests' step is skipped and the workers rewrite as they did. Nothing here
changes what any test runs.
"""

from __future__ import annotations

import compileall
import re
import sys
from pathlib import Path
from types import SimpleNamespace

# What pytest rewrites: every conftest.py and the files matching its default `python_files`.
REWRITTEN = re.compile(r"(^|/)(conftest|test_[^/]*|[^/]*_test)\.py$")


def warm(root: Path) -> int:
    """Compile reportgen/ and tests/ under `root`; return how many test modules were rewritten."""
    for folder in ("reportgen", "tests"):
        compileall.compile_dir(root / folder, quiet=1, rx=REWRITTEN)  # plain imports: timestamped pycs
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    state = SimpleNamespace(trace=lambda *args: None)  # _write_pyc's trace of a failed write
    written = 0
    for fn in sorted((root / "tests").rglob("*.py")):
        if not REWRITTEN.search(fn.as_posix()):
            continue
        try:
            cache_dir = rewrite.get_cache_dir(fn)
            pyc = cache_dir / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is not None:
                continue
            if not rewrite.try_makedirs(cache_dir):
                return written
            source_hash, co = rewrite._rewrite_test(fn, None)  # type: ignore[arg-type] (no config: the defaults)
            written += bool(rewrite._write_pyc(state, co, source_hash, pyc))  # type: ignore[arg-type]
        except SyntaxError:  # collection reports it
            continue
        except (AttributeError, TypeError):  # pytest's internals moved: the workers rewrite as before
            return written
    return written


if __name__ == "__main__":
    warm(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]))
