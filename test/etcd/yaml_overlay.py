#!/usr/bin/python3
"""Prints a YAML file with an overlay merged into it: docs/setup/patroni.yml
as a suite runs it, with the suite's ports, directories and test-only
settings. Usage: yaml_overlay.py FILE < OVERLAY.json

The overlay is a JSON object merged key by key (objects into objects; any
other value replaces). A key the overlay replaces must exist in the file
unless the overlay marks it new ("+key"), so a renamed or moved key in the
docs fails the suite instead of drifting apart from it."""
import json
import sys

import yaml


def plain(value):
    """A new value as it goes into the file: no "+" marks left in it."""
    if isinstance(value, dict):
        return {k.lstrip("+"): plain(v) for k, v in value.items()}
    return value


def merge(base, over, path):
    for key, value in over.items():
        new = key.startswith("+")
        key = key.lstrip("+")
        if not new and key not in base:
            sys.exit(f"yaml_overlay: {path}{key} is not in the file")
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value, f"{path}{key}.")
        else:
            base[key] = plain(value)


with open(sys.argv[1], encoding="utf-8") as f:
    doc = yaml.safe_load(f)
merge(doc, json.load(sys.stdin), "")
print(yaml.safe_dump(doc, sort_keys=False))
