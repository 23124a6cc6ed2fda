#!/usr/bin/env python3
"""Stamp this working tree before it is copied to a machine without `.git`, or check a copy.

    python3 scripts/device/stamp-tree.py            # writes .tree-stamp.json (git ignores it)
    python3 scripts/device/stamp-tree.py --verify   # on the copy: exit 0 if every file matches

The stamp names the commit and holds the SHA-256 of every tracked file; reportgen's provenance
reads it where there is no `.git`, so the runs name the commit (see docs/provenance.md).
Exit codes: 0 done / matches, 1 the copy differs from its stamp, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from reportgen.capture.tree_stamp import StampError, find_stamp, read_stamp, verify_tree, write_stamp


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "tree", nargs="?", default=str(Path(__file__).resolve().parents[2]), help="the tree (default: this repository)"
    )
    p.add_argument("--verify", action="store_true", help="check the tree against its stamp instead of writing one")
    opts = p.parse_args(argv)
    tree = Path(opts.tree)
    try:
        if not opts.verify:
            path = write_stamp(tree)
            stamp = read_stamp(path)
            state = (
                "dirty: " + ", ".join(ln.strip() for ln in stamp.status_short.splitlines()[:5])
                if stamp.dirty
                else "clean"
            )
            print(f"stamped {stamp.commit[:12]} ({len(stamp.files)} tracked files, {state}) -> {path}")
            return 0
        found = find_stamp(tree)
        if found is None:
            print(f"error: no .tree-stamp.json in {tree} or above; stamp the tree before copying it", file=sys.stderr)
            return 2
        stamp = read_stamp(found)
        check = verify_tree(found.parent, stamp)
    except StampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if check.matches:
        state = "dirty when stamped" if stamp.dirty else "clean"
        print(f"tree matches its stamp: commit {stamp.commit[:12]}, {len(stamp.files)} files, {state}")
        return 0
    print(
        f"tree differs from its stamp (commit {stamp.commit[:12]}): "
        f"{len(check.changed)} changed {check.changed[:10]}, {len(check.missing)} missing {check.missing[:10]}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
