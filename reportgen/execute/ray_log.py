"""The job log of a Ray run, read back (execute stage): the wrapper on the node
(reportgen.execute.ray_node) tags each line of the workload's stdout and stderr and ends with a
result block (result.json and the captured files, a checksummed tar.gz); here the log is split
back into stdout.log and stderr.log and the result unpacked into the run folder.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reportgen.execute import ray_node
from reportgen.store import untar


class LogDemux:
    """Splits the wrapper's tagged job log back into stdout.log, stderr.log and the result block."""

    def __init__(self, stdout_path: Path, stderr_path: Path) -> None:
        self.out = open(stdout_path, "a", encoding="utf-8")  # noqa: SIM115 (open until close())
        self.err = open(stderr_path, "a", encoding="utf-8")  # noqa: SIM115
        self.pending = ""
        self.consumed = 0  # characters of the job log fed so far
        self.result: list[str] = []
        self.lock = threading.Lock()
        self.caught_up = False  # the whole log was taken from the job's full log: later chunks are repeats

    def feed(self, text: str) -> None:
        with self.lock:
            if self.caught_up:
                return
            self._feed(text)

    def catch_up(self, full: str) -> None:
        """Feed what of the job's full log (fetched once it ended) was not fed yet, and ignore the
        live tail from then on: the tail's websocket closes seconds after the job ends (about 4 s
        on a loopback cluster), so waiting for it would add those seconds to every run."""
        with self.lock:
            if len(full) > self.consumed:
                self._feed(full[self.consumed :])
            self.caught_up = True

    def _feed(self, text: str) -> None:  # under self.lock
        self.consumed += len(text)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self._line(line)
        self.out.flush()
        self.err.flush()

    def _line(self, line: str) -> None:
        tag, body = line[:2], line[2:]
        if tag == "O|":
            self.out.write(body + "\n")
        elif tag == "o|":
            self.out.write(body)
        elif tag == "E|":
            self.err.write(body + "\n")
        elif tag == "e|":
            self.err.write(body)
        elif tag == "R|":
            self.result.append(body)
        else:  # Ray's own lines, or a wrapper that failed before it could tag anything
            self.err.write(line + "\n")

    @property
    def result_complete(self) -> bool:
        """The wrapper's result block has come through: it is about to exit, whatever Ray reports."""
        with self.lock:
            return any(line.startswith("END ") for line in self.result) and "BEGIN" in self.result

    def close(self) -> None:
        with self.lock:
            if self.pending:
                self._line(self.pending)
                self.pending = ""
            self.out.close()
            self.err.close()


def unpack_result(lines: Sequence[str]) -> tuple[dict[str, Any], bytes] | None:
    """(result.json, the tar.gz bytes) from a complete, intact result block; None otherwise."""
    if "BEGIN" not in lines:
        return None
    start = len(lines) - 1 - lines[::-1].index("BEGIN")
    tail = lines[start + 1 :]
    end = next((i for i, line in enumerate(tail) if line.startswith("END ")), None)
    if end is None:
        return None
    data = "".join(tail[:end])
    if hashlib.sha256(data.encode()).hexdigest() != tail[end].split(" ", 1)[1].strip():
        return None
    blob = base64.b64decode(data)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        member = tar.extractfile(ray_node.RESULT_FILE)
        result = json.loads(member.read()) if member else {}
    return result, blob


def extract_into(blob: bytes, run_dir: Path) -> None:
    """Put the node's provenance/, gpu.jsonl, tensorboard/, traces/ into the run folder."""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name != ray_node.RESULT_FILE]
        untar.extract_data(tar, run_dir, members)
