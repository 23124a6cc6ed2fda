"""reportgen: run, ingest, analyze and publish performance experiments for RL training.

Pipeline (imports run one way, left to right):
spec -> plan -> execute + capture -> store -> ingest -> analysis -> render -> MkDocs.
"""

__version__ = "0.1.0"
