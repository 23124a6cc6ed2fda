"""Shorten machine-specific absolute paths in published pages (render stage).

The protocol's rule: no machine-specific paths in a PR. When `shorten_paths` is on, the
loader passes every string it reads from runs/ through `PathShortener`, before any escaping:
the repository root becomes `<repo>`, home folders `~`, temporary folders `<tmp>`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
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
