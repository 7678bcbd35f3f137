#!/usr/bin/env python3
"""Every `.. option::` entry of fio's HOWTO, one name per line with the
engines (or the built-in profile) it belongs to, tab-separated: the list
crates/core/src/job/fio-3.33-options.txt that job/compat.rs classifies.

    zcat /usr/share/doc/fio/HOWTO.rst.gz | scripts/fio-options-from-howto.py \
        > crates/core/src/job/fio-3.33-options.txt
"""
import re
import sys

seen = set()
profile = None
for line in sys.stdin:
    line = line.rstrip("\n")
    m = re.match(r"^(\w+) profile options$", line)
    if m:
        profile = "profile=" + m.group(1).lower()
        continue
    if not line.startswith(".. option:: "):
        continue
    spec = line[len(".. option:: "):].strip()
    owners = []
    m = re.match(r"^(.*?)\s*:\s*(\[.*)$", spec)
    if m and not spec.startswith("--"):
        spec = m.group(1)
        owners = [e for g in re.findall(r"\[([^\]]+)\]", m.group(2)) for e in g.split(",")]
    elif profile:
        owners = [profile]
    for part in spec.split(", "):
        name = re.split(r"[=\s]", part.strip())[0]
        if not name or name in seen and not owners:
            continue
        key = (name, " ".join(owners))
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        print(name + ("\t" + " ".join(owners) if owners else ""))
