#!/usr/bin/env python3
"""Writes every match and action string of the reference Southbound dump as a seed file."""
import hashlib, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "tests", "data", "lflows_final.json")
out = os.path.join(here, "seeds", "lflow")
os.makedirs(out, exist_ok=True)
rows = json.load(open(src))["data"]
texts = {r[i] for r in rows for i in (6, 7) if isinstance(r[i], str)}
for t in texts:
    name = hashlib.sha1(t.encode()).hexdigest()[:16]
    with open(os.path.join(out, name), "w") as f:
        f.write(t)
print(f"{len(texts)} seeds in {out}", file=sys.stderr)
