import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the fixture builder sits next to the tests
