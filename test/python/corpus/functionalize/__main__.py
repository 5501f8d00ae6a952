"""``python -m corpus.functionalize``: list the cases, their tags and stock failures."""

from . import PROGRAMS

for c in PROGRAMS:
    mark = f"  [stock fails: {c.stock_fails_reason}]" if c.stock_fails else ""
    print(f"{c.name:45s} {','.join(c.tags)}{mark}")
print(f"{len(PROGRAMS)} cases")
