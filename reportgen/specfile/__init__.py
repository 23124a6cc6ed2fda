"""The experiment spec: a TOML file declaring baseline, candidates, fixed workload and analysis.

`load_spec(path, profile=None)` returns a validated, frozen `Spec` or raises `UserError` with one
line naming the file, the key and what was expected. Format: docs/formats/spec.md.
"""

from reportgen.specfile.load import load_spec, parse_spec
from reportgen.specfile.model import (
    AnalysisSpec,
    Candidate,
    ProfilerSpec,
    ProvenanceSpec,
    RecipeSpec,
    RunSpec,
    Spec,
    Window,
    WorkloadSpec,
)

__all__ = [
    "AnalysisSpec",
    "Candidate",
    "ProfilerSpec",
    "ProvenanceSpec",
    "RecipeSpec",
    "RunSpec",
    "Spec",
    "Window",
    "WorkloadSpec",
    "load_spec",
    "parse_spec",
]
