import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# The stock pass tries view replays that fail by design and FakeTensor logs
# each failure at ERROR level; it is noise in test output.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
