"""Archives from elsewhere unpacked inside their folder only (reportgen/store/untar.py): with tarfile's
"data" filter where this Python has it, and with the module's own checks where it has not (Debian
12's Python 3.11.2: `extractall(filter=...)` raised a TypeError there, and PR mode, bisection and
every Ray run failed). Both paths are run on this Python: the checks are called directly."""

from __future__ import annotations

import contextlib
import io
import stat
import tarfile
from pathlib import Path

import pytest

from reportgen.store import untar


def _archive(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _dir(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info, None


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


EXTRACTORS = {
    "the filter where this Python has it": untar.extract_data,
    "the module's own checks": untar.extract_checked,
}


@pytest.mark.parametrize("extract", list(EXTRACTORS.values()), ids=list(EXTRACTORS))
def test_files_and_folders_land_inside_with_their_contents(tmp_path: Path, extract) -> None:
    blob = _archive([_dir("a"), _file("a/b.txt", b"hello"), _file("run.sh", b"#!/bin/sh\n", 0o4777)])
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        extract(tar, tmp_path / "out")
    assert (tmp_path / "out" / "a" / "b.txt").read_bytes() == b"hello"
    mode = stat.S_IMODE((tmp_path / "out" / "run.sh").stat().st_mode)
    assert mode & stat.S_IXUSR and not mode & (
        stat.S_ISUID | stat.S_IWGRP | stat.S_IWOTH
    )  # set-uid, group/other write dropped


def test_some_members_only(tmp_path: Path) -> None:
    blob = _archive([_file("keep.txt"), _file("skip.txt")])
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        untar.extract_checked(tar, tmp_path, [m for m in tar.getmembers() if m.name == "keep.txt"])
    assert (tmp_path / "keep.txt").is_file() and not (tmp_path / "skip.txt").exists()


OUTSIDE = "outside.txt"  # what a member must never write: tmp_path / OUTSIDE, next to the folder


@pytest.mark.parametrize(
    "member",
    [
        lambda tmp: _file(str(tmp / OUTSIDE)),
        lambda tmp: _file("../" + OUTSIDE),
        lambda tmp: _file("a/../../" + OUTSIDE),
        lambda tmp: _link("evil", str(tmp)),
        lambda tmp: _link("up", "../.."),
    ],
    ids=["absolute", "climbs", "climbs-inside-a-name", "symlink-out", "symlink-up"],
)
@pytest.mark.parametrize("extract", list(EXTRACTORS.values()), ids=list(EXTRACTORS))
def test_a_member_that_would_land_outside_never_does(tmp_path: Path, member, extract) -> None:
    """The filter refuses it or (an absolute name) strips it to a name inside; the module's own checks
    refuse it before anything is written."""
    blob = _archive([_file("first.txt"), member(tmp_path)])
    dest = tmp_path / "out"
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        if extract is untar.extract_checked:
            with pytest.raises(untar.UnsafeArchiveError):
                extract(tar, dest)
            assert not (dest / "first.txt").exists()
        else:
            with contextlib.suppress(tarfile.TarError):
                extract(tar, dest)
    assert not (tmp_path / OUTSIDE).exists()
    links = [p for p in dest.rglob("*") if p.is_symlink()] if dest.exists() else []
    assert all(p.resolve().is_relative_to(dest.resolve()) for p in links), links


def test_without_the_filter_a_link_is_refused_naming_the_python(tmp_path: Path) -> None:
    blob = _archive([_file("target.txt"), _link("inside", "target.txt")])
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar, pytest.raises(untar.UnsafeArchiveError, match="Python 3"):
        untar.extract_checked(tar, tmp_path)


def test_a_device_file_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("dev")
    info.type = tarfile.CHRTYPE
    blob = _archive([(info, None)])
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar, pytest.raises(untar.UnsafeArchiveError, match="not a regular"):
        untar.extract_checked(tar, tmp_path)
