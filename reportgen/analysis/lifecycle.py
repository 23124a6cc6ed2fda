"""A run's attempts for the analysis document, from its manifest (the page shows one line each).

Part of reportgen.analysis (pure). Ingest records the lifecycle a log shows in the manifest's
`ingest.lifecycle` (reportgen.ingest.lifecycle: jobs, in-run restarts, resumes). A reader of the
report needs it when there was more than one plain start at step 0: which attempt trained which
steps, which failed and how, what a restart redid. A run with one attempt from step 0 gets none.
"""

from __future__ import annotations

from pydantic import ValidationError

from reportgen.analysis import document as doc
from reportgen.store.run import Manifest

FIELDS = tuple(doc.RunAttempt.model_fields)


def run_attempts(manifest: Manifest) -> list[doc.RunAttempt] | None:
    """The attempts of a run's log, or None when it had one plain attempt (or no lifecycle was
    recorded: a manifest written before ingest read lifecycles, or a malformed one)."""
    entries = manifest.attempts
    if not entries:
        return None
    if len(entries) == 1 and not entries[0].start_step:
        return None
    try:
        return [
            doc.RunAttempt.model_validate({k: v for k, v in e.to_dict().items() if k in FIELDS and v is not None})
            for e in entries
        ]
    except ValidationError:
        return None
