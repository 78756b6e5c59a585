"""Validates TOML files against rodlab's JSON schemas with an independent
validator (the `jsonschema` package, Draft 2020-12), as an editor's TOML
language server would: prints one line per file, "ok" or its errors.

  validate_schemas.py KIND=SCHEMA.json FILE.toml [FILE.toml ...] [KIND=...]
"""
import json
import sys
import tomllib

import jsonschema

validator = None
for arg in sys.argv[1:]:
    if "=" in arg:
        kind, path = arg.split("=", 1)
        validator = jsonschema.Draft202012Validator(json.load(open(path)))
        continue
    doc = tomllib.load(open(arg, "rb"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    print(arg, "ok" if not errors else "; ".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors))
