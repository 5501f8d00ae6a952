import logging

# The stock pass tries view replays that fail by design and FakeTensor logs
# each failure at ERROR level; it is noise in test output.
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
