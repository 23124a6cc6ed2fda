"""The base of every model of analysis.json, and the vocabulary's types its fields use.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reportgen import vocab

Number = int | float
Direction = vocab.Direction
VerdictStatus = vocab.VerdictStatus
Basis = vocab.Basis


class Model(BaseModel):
    """A part of analysis.json: frozen, and strict about its keys."""

    # Unknown keys are an error: a misspelt field must not silently read as its default.
    model_config = ConfigDict(extra="forbid", frozen=True)
