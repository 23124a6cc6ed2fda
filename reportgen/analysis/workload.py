"""What ran, for the line every report opens with: the trainer, its model, steps and batch.

Part of reportgen.analysis (pure). A reviewer must know before any number whether the runs trained
Relax on a real model or the embedded stand-in trainer on a random-init one. The trainer is named
by the spec's `[recipe] entrypoint`; a trainer reportgen knows (vocab.WORKLOADS) is described with
its preset's model and the version that made the runs (the log's `workload: grpo-max v2` line, which
ingest records; runs that printed none were made by the first version); any other by the model files
the spec declared (their manifest hash).
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.analysis import document as doc
from reportgen.analysis.guardrails import expected_samples
from reportgen.analysis.inputs import argv_value
from reportgen.store.run import StoredRun
from reportgen.vocab import WORKLOADS


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text is not None else None
    except ValueError:
        return None


def describe(
    entrypoint: str | None, baseline: Sequence[StoredRun], *, steps: int | None, batch_flag: str
) -> doc.WorkloadInfo:
    """The workload of an experiment, read from the spec's entrypoint and the baseline's first run."""
    run = baseline[0] if baseline else None
    argv = run.argv if run is not None else {}
    known = WORKLOADS.get(entrypoint or "")
    said = run.manifest.workload if run is not None else None
    version = said.version if said is not None else None
    model, params = None, None
    if known is not None:
        version = version if version in known.models else known.unversioned
        how = known.models[version]
        preset = argv_value(argv, "--preset")
        shape = known.presets.get(preset or "")
        if shape is not None:
            model = f"{shape[0]}, preset {preset}, {how}"
            params = shape[1]
        else:
            model = how
    sha = None
    if run is not None:
        sha = run.manifest.hashes.model_manifest_sha256
        if model is None:
            model = f"model files hashed (manifest {str(sha)[:12]})" if sha else None
    samples = expected_samples(run, batch_flag)[0] if run is not None else None
    ignore_eos = argv_value(argv, "--rollout-ignore-eos")
    return doc.WorkloadInfo(
        entrypoint=entrypoint,
        name=known.name.format(version=version) if known else None,
        doc=known.doc if known else None,
        model=model,
        parameters=params,
        steps=steps,
        samples_per_step=samples,
        max_response_tokens=_int(argv_value(argv, "--rollout-max-response-len")),
        fixed_length=ignore_eos is not None and ignore_eos.lower() not in ("false", "0"),
        model_manifest_sha256=sha,
        version=version,
        warm_start_sha256=said.warm_start_sha256 if said is not None else None,
    )
