"""Storage: reads and writes the runs/ tree. No formatting, no analysis.

Every file is written atomically (temp file + rename in the same folder). Every JSON document
of a run folder is read and written through its typed, versioned model (`models.py`), whose
`schema_version` is checked on read; `run_folder.py` is the one reader of an experiment folder
for the analysis, and hashes exactly the bytes it reads (`inputs_sha256`, `freshness.py`).
"""
