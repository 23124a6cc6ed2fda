"""Shorten machine-specific absolute paths in published pages (render stage).

The protocol's rule: no machine-specific paths in a PR. When `shorten_paths` is on, the
loader passes every string it reads from runs/ through `PathShortener`, before any escaping:
the repository root becomes `<repo>`, home folders `~`, temporary folders `<tmp>`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HOME = re.compile(r"(?<![\w.-])(?:/home/[^/\s'\"]+|/Users/[^/\s'\"]+|/root(?=[/\s'\"]|$))")
_TMP = re.compile(r"(?<![\w.-])(?:/private)?/(?:tmp|var/folders/[^\s'\"]+?/T)/[^/\s'\"]+")


@dataclass(frozen=True)
class PathShortener:
    """Replaces known absolute prefixes; `enabled=False` returns strings unchanged."""

    enabled: bool = True
    roots: tuple[tuple[str, str], ...] = ()

    @classmethod
    def for_repo(cls, repo_root: Path | None, *, enabled: bool = True, runs_root: Path | None = None) -> PathShortener:
        roots: list[tuple[str, str]] = []
        if runs_root is not None:
            roots.append((str(Path(runs_root).resolve()), "<runs>"))
        if repo_root is not None:
            roots.append((str(Path(repo_root).resolve()), "<repo>"))
        home = os.path.expanduser("~")
        if home not in ("/", ""):
            roots.append((home, "~"))
        # Longest first, so runs/ inside the repo wins over the repo itself.
        roots.sort(key=lambda t: len(t[0]), reverse=True)
        return cls(enabled=enabled, roots=tuple(roots))

    def __call__(self, s: str) -> str:
        if not self.enabled or "/" not in s:
            return s
        for prefix, name in self.roots:
            if prefix and prefix != "/":
                s = re.sub(re.escape(prefix) + r"(?=[/\s'\"]|$)", name, s)
        s = _TMP.sub("<tmp>", s)
        return _HOME.sub("~", s)

    def deep(self, obj: Any) -> Any:
        """The same structure with every string (keys included) shortened."""
        if not self.enabled:
            return obj
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, dict):
            return {self(k) if isinstance(k, str) else k: self.deep(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.deep(v) for v in obj)
        return obj


# An absolute path as it stands in a string: from a slash to the next blank or quote, the ends of
# the path the shortener's patterns see (a root is replaced where it is followed by one of them).
_PATH_TOKEN = re.compile(r"/[^\s'\"]*")


@dataclass(frozen=True)
class RootsSeen(PathShortener):
    """A shortener that keeps every absolute path of the strings it shortens (`paths`): what it
    made is the same for any shortener that finds the same roots in them (`roots_in`).
    render/site.py keeps an experiment's pages by that, so another clone of the same runs reads
    them, and a clone whose root those runs name (they were recorded inside it) renders them again."""

    paths: set[str] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def of(cls, shorten: PathShortener) -> RootsSeen:
        return cls(enabled=shorten.enabled, roots=shorten.roots)

    def __call__(self, s: str) -> str:
        if self.enabled and "/" in s:
            self.paths.update(_PATH_TOKEN.findall(s))
        return super().__call__(s)


def roots_answerable(shorten: PathShortener) -> bool:
    """Whether kept paths (`RootsSeen.paths`) can tell which of `shorten`'s roots a string held: not
    for a root with a blank or a quote in it, which a kept path never spans."""
    return all(_PATH_TOKEN.fullmatch(prefix) is not None for prefix, _ in shorten.roots if prefix and prefix != "/")


def roots_in(shorten: PathShortener, paths: Iterable[str]) -> frozenset[tuple[str, str]] | None:
    """The roots of `shorten` that it would replace in strings holding `paths` (absolute paths as
    `RootsSeen` keeps them); None when that cannot be told from them (`roots_answerable`)."""
    if not shorten.enabled:
        return frozenset()
    if not roots_answerable(shorten):
        return None
    found = set()
    for prefix, name in shorten.roots:
        if not prefix or prefix == "/":
            continue
        pattern = re.compile(re.escape(prefix) + r"(?=/|$)")
        if any(pattern.search(p) for p in paths):
            found.add((prefix, name))
    return frozenset(found)
