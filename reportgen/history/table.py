"""A typed Parquet table of reportgen: rows of one pydantic model, with the table's kind and schema
version in the file's key-value metadata (pure; part of reportgen.history).

history.parquet (history/model.py) and paired-history.parquet (history/paired_model.py) are both
derived from runs/ and rebuilt, never migrated: a reader refuses another kind or version with one
line naming the command that rebuilds the file. What differs between them is only the row model
and the names; this module holds what they share, so the two readers cannot drift apart (a NaN
read back as null, every row validated, the same one-line refusals). The Parquet column types come
from the row model's annotations (`column_types`), so a field's type is declared once.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_args

import pandas as pd
from pydantic import BaseModel, ValidationError

from reportgen.errors import UserError, first_problem

Row = TypeVar("Row", bound=BaseModel)

# pandas dtypes of the annotations that have one fixed column type; a nullable float is float64
# too (null is NaN, read back as null). Nullable ints and bools, strings and the rest keep the
# type pandas gives them (object where a null can stand).
_DTYPES: dict[Any, str] = {float: "float64", int: "int64", bool: "bool"}


def column_types(model: type[BaseModel]) -> dict[str, str]:
    """Field -> pandas dtype, from the model's annotations (`_DTYPES`): the table's types are the
    model's, not a second list beside it that could drift from it."""
    out = {}
    for name, field in model.model_fields.items():
        ann = field.annotation
        if ann in _DTYPES:
            out[name] = _DTYPES[ann]
        elif set(get_args(ann)) == {float, type(None)}:
            out[name] = "float64"
    return out


@dataclass(frozen=True)
class TableFormat(Generic[Row]):
    """One table's format: its row model (columns and their types), kind and schema version."""

    model: type[Row]
    kind: str  # also the metadata key
    schema_version: int
    what: str  # in a refusal: "a reportgen history table"
    rebuild: str  # the command that rebuilds it, in words

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.model.model_fields)

    @property
    def meta_key(self) -> bytes:
        return self.kind.encode()

    def metadata(self) -> dict[bytes, bytes]:
        return {self.meta_key: json.dumps({"kind": self.kind, "schema_version": self.schema_version}).encode()}

    def to_frame(self, rows: Sequence[Row]) -> pd.DataFrame:
        """The rows as a DataFrame, one column per field in the model's order (empty: typed columns)."""
        frame = pd.DataFrame([r.model_dump() for r in rows], columns=list(self.columns))
        return frame.astype(column_types(self.model))

    def from_frame(self, frame: pd.DataFrame, meta: Mapping[bytes, bytes] | None, source: str) -> list[Row]:
        """Validate a table read back from Parquet: kind, schema version, then every row."""
        raw = (meta or {}).get(self.meta_key)
        try:
            head = json.loads(raw) if raw else None
        except ValueError:
            head = None
        if not isinstance(head, dict) or head.get("kind") != self.kind:
            raise UserError(f"{source}: not {self.what} (no {self.kind!r} metadata); {self.rebuild}")
        if head.get("schema_version") != self.schema_version:
            raise UserError(
                f"{source} has schema {head.get('schema_version')}, this reportgen reads {self.schema_version}; "
                f"{self.rebuild}"
            )
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise UserError(f"{source}: column(s) {', '.join(missing)} missing; {self.rebuild}")
        rows = []
        for i, row in enumerate(frame[list(self.columns)].to_dict("records")):
            clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}  # NaN -> null
            try:
                rows.append(self.model.model_validate(clean))
            except ValidationError as exc:
                raise UserError(f"{source}: row {i}: {first_problem(exc, 'the row')}; {self.rebuild}") from None
        return rows

    def to_parquet(self, rows: Sequence[Row]) -> bytes:
        """The table as Parquet bytes, its kind and schema version in the metadata."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(self.to_frame(rows), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **self.metadata()})
        buf = io.BytesIO()
        pq.write_table(table, buf)
        return buf.getvalue()

    def from_parquet(self, data: bytes, source: str) -> list[Row]:
        """Rows of Parquet bytes, validated; a file that is not Parquet is one line too."""
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(io.BytesIO(data))
        except Exception as exc:
            raise UserError(f"{source}: not a Parquet file ({exc.__class__.__name__}); {self.rebuild}") from None
        return self.from_frame(table.to_pandas(), table.schema.metadata, source)
