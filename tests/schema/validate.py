#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Validates JSON documents against one of schemas/*.json (draft 2020-12,
references resolved locally). Used by the C tests to hold what the worker
produces (events) to the schemas:  validate.py SCHEMA FILE...
Exit 0 when every file is valid; otherwise prints each error."""
import json
import sys
from pathlib import Path

from jsonschema import Draft202012Validator, RefResolver

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    schema = json.loads((SCHEMAS / argv[1]).read_text())
    store = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")}
    resolver = RefResolver(base_uri=(SCHEMAS.as_uri() + "/"), referrer=schema,
                           store={SCHEMAS.as_uri() + "/" + k: v
                                  for k, v in store.items()})
    validator = Draft202012Validator(schema, resolver=resolver)
    bad = 0
    for name in argv[2:]:
        doc = json.loads(Path(name).read_text())
        for err in validator.iter_errors(doc):
            bad += 1
            path = "$" + "".join("[%d]" % p if isinstance(p, int) else "." + p
                                 for p in err.absolute_path)
            print("%s: %s: %s" % (name, path, err.message))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
