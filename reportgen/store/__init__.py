"""Storage: reads and writes the runs/ tree. No formatting, no analysis.

Every file is written atomically (temp file + rename in the same folder), and every JSON
document carries a `schema_version`.
"""
