"""Unpacking an archive that came from elsewhere (a Ray node's result, a `git archive` of a revision)
into a folder, never outside it.

Python's tarfile has a "data" extraction filter (3.12, and 3.11.4 / 3.10.12 onwards) that refuses
absolute names, names that climb out of the folder, links that point out of it, and device files,
and drops set-user-id and group/other write bits. Debian 12's Python 3.11.2, which reportgen's
`requires-python` admits, has no filter: `extractall(filter="data")` fails there with a TypeError,
and `extractall()` without it trusts every member. On such a Python the same rules are applied here
before anything is written, more strictly for links: an archive holding a symbolic or hard link is
refused (naming the Python that lacks the filter), since following where links lead member after
member is what the filter exists for.
"""

from __future__ import annotations

import copy
import os
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath


class UnsafeArchiveError(tarfile.TarError):
    """A member that would land outside the folder, or that this Python cannot check."""


def has_data_filter() -> bool:
    return hasattr(tarfile, "data_filter")


def extract_data(tar: tarfile.TarFile, dest: Path, members: Sequence[tarfile.TarInfo] | None = None) -> None:
    """Extract `members` (default: all) of `tar` under `dest` with the "data" filter's rules."""
    if has_data_filter():
        tar.extractall(dest, members=members, filter="data")
    else:
        extract_checked(tar, dest, members)


def extract_checked(tar: tarfile.TarFile, dest: Path, members: Sequence[tarfile.TarInfo] | None = None) -> None:
    """What `extract_data` does where tarfile has no filter: every member checked first (regular
    files and folders only, each inside `dest`), then extracted with its mode trimmed as the filter
    trims it; nothing is written when one member is refused."""
    chosen = list(tar.getmembers() if members is None else members)
    for member in chosen:
        check_member(member)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for member in chosen:
        safe = copy.copy(member)  # TarInfo.replace came with the filter
        safe.mode = _data_mode(member)
        # owned by whoever extracts it, as the filter leaves it (names that resolve to no one, ids of this process)
        safe.uid, safe.gid, safe.uname, safe.gname = os.getuid(), os.getgid(), "", ""
        tar.extract(safe, dest, set_attrs=True, numeric_owner=True)


def check_member(member: tarfile.TarInfo) -> None:
    """Refuse what the "data" filter refuses, and links (see the module's docstring)."""
    name = member.name
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(f"{name!r}: an absolute name")
    if ".." in path.parts:
        raise UnsafeArchiveError(f"{name!r}: a name that climbs out of the folder")
    if member.issym() or member.islnk():
        python = ".".join(map(str, sys.version_info[:3]))
        raise UnsafeArchiveError(
            f"{name!r}: a link, and this Python ({python}) has no tarfile data filter to check where it "
            "leads; use Python 3.11.4 or newer"
        )
    if not (member.isreg() or member.isdir()):
        raise UnsafeArchiveError(f"{name!r}: not a regular file or folder")


def _data_mode(member: tarfile.TarInfo) -> int:
    """The mode the "data" filter gives: no set-user/group-id or sticky bit, no group or other write
    bit; a file is readable and writable by its owner, executable by others only where by its owner."""
    mode = member.mode & 0o755
    if not member.isreg():
        return mode | 0o700
    mode |= 0o600
    if not mode & 0o100:
        mode &= ~0o011
    return mode
