#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks schemas/ against itself: the JSON Schemas, the AsyncAPI document and
the example documents listed in schemas/examples/manifest.json.

    /usr/bin/python3 tests/schema/check_examples.py [-v]
    /usr/bin/python3 tests/schema/check_examples.py --print-manifest

What it checks:
  - every schemas/*.json is a valid draft 2020-12 schema (check_schema);
  - schemas/asyncapi.yaml parses, is AsyncAPI 3.0.0, every $ref in it resolves
    (inside the document, or to a schema file beside it and a JSON pointer in
    that file), every schemaFormat is draft 2020-12 and every inline schema is
    a valid 2020-12 schema;
  - every example in the manifest gives the verdict the manifest says:
    parsed as the C side parses (duplicate keys and NaN/Infinity are
    invalid_json), unwrapped by its envelope ("bare": a request with "kind",
    "cloudevent": a structured CloudEvent whose `data` is the request, "none":
    the document itself), validated against its schema; for requests and out
    events the AsyncAPI message payload must agree; for an invalid example the
    manifest's "field" must be where a validation error points;
    "c_only": true marks examples JSON Schema accepts and only the C validator
    refuses (uniqueness, catalogue look-ups, file existence);
  - every file under schemas/examples/{valid,invalid} is in the manifest and
    every manifest entry exists.

Patterns are matched with ECMA-262 semantics, as JSON Schema specifies and as
the C validator does: `$` is the end of the string. (Python's `$` also
matches before a final newline, which would let "id\\n" through.)

--print-manifest prints one tab-separated line per example for the C tests:
  path (relative to schemas/examples/), schema, valid|invalid,
  bare|cloudevent|none, error code or -, JSON path or -, c_only or -.

Ends with "N passed, N failed"; exit status 1 if anything failed.
Needs Debian's python3-jsonschema (4.10) and python3-yaml.
"""
import argparse
import json
import os
import re
import signal
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)

import jsonschema  # noqa: E402
from jsonschema import Draft202012Validator, RefResolver  # noqa: E402
from jsonschema.exceptions import ValidationError  # noqa: E402

TOP = Path(__file__).resolve().parent.parent.parent
SCHEMAS = TOP / "schemas"
EXAMPLES = SCHEMAS / "examples"
MANIFEST = EXAMPLES / "manifest.json"
ASYNCAPI = SCHEMAS / "asyncapi.yaml"

SCHEMA_FILES = [
    "launch-request.v1.json",
    "cancel-request.v1.json",
    "status-changed.v1.json",
    "logs-archived.v1.json",
    "log-chunk.v1.json",
    "gpu-series.v1.json",
    "tenants.v1.json",
]
DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FORMAT = "application/schema+json;version=draft-2020-12"

# Request schemas: what a bare request's "kind" and a CloudEvent's "type" are.
REQUEST_KIND = {
    "launch-request.v1.json": "launch",
    "cancel-request.v1.json": "cancel",
}
REQUEST_CE_TYPE = {
    "launch-request.v1.json": "forge.launch.requested",
    "cancel-request.v1.json": "forge.launch.cancel_requested",
}
# The AsyncAPI message whose payload must agree with each schema's verdict.
ASYNCAPI_MESSAGE = {
    "launch-request.v1.json": "launchRequested",
    "cancel-request.v1.json": "cancelRequested",
    "status-changed.v1.json": "statusChanged",
    "logs-archived.v1.json": "logsArchived",
    "log-chunk.v1.json": "logChunk",
}
ERROR_CODES = {
    "invalid_json", "schema", "too_large", "image_format", "image_missing",
    "oci_image_refused", "series_unknown", "series_unconstrained",
    "mount_refused", "env_refused", "config",
}
ENVELOPES = {"bare", "cloudevent", "none"}


# ------------------------------------------------------- ECMA-262 patterns
def ecma_to_python(pattern):
    """Rewrites every `$` anchor (outside a character class, unescaped) as
    `\\Z`, so Python's re matches it where ECMA-262 does: only at the end."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a ']' first in a class (or after '^') is literal in Python
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        elif c == "$":
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


_compiled = {}


def ecma_search(pattern, text):
    rx = _compiled.get(pattern)
    if rx is None:
        rx = _compiled[pattern] = re.compile(ecma_to_python(pattern))
    return rx.search(text) is not None


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not ecma_search(pattern,
                                                                 instance):
        yield ValidationError("%r does not match %r" % (instance, pattern))


Validator = jsonschema.validators.extend(Draft202012Validator,
                                         {"pattern": _pattern})
# jsonschema picks the class for a subschema that names its $schema (as a
# schema file reached through a $ref does) from this registry: make it ours.
jsonschema.validators.validates("draft2020-12")(Validator)


# ---------------------------------------------------------------- results
class Results:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def ok(self, what):
        self.passed += 1
        if self.verbose:
            print("ok   " + what)

    def fail(self, what, why):
        self.failed += 1
        print("FAIL %s: %s" % (what, why))

    def check(self, cond, what, why):
        if cond:
            self.ok(what)
        else:
            self.fail(what, why)
        return cond


# ----------------------------------------------------------------- loading
class InvalidJSON(Exception):
    pass


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise InvalidJSON("duplicate key %r" % k)
        seen[k] = v
    return seen


def _no_constant(name):
    raise InvalidJSON("%s is not JSON" % name)


def load_json_strict(path):
    """Parses as the C side does (jansson, JSON_REJECT_DUPLICATES)."""
    try:
        text = path.read_bytes().decode("utf-8")
        return json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, InvalidJSON) as e:
        raise InvalidJSON(str(e))


def json_path(parts):
    s = "$"
    for p in parts:
        s += "[%d]" % p if isinstance(p, int) else "." + str(p)
    return s


def resolve_pointer(doc, pointer):
    if pointer in ("", "/"):
        return doc
    if not pointer.startswith("/"):
        raise KeyError("not a JSON pointer: %r" % pointer)
    node = doc
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(token)]
        elif isinstance(node, dict):
            node = node[token]
        else:
            raise KeyError(pointer)
    return node


def file_uri(path):
    return path.resolve().as_uri()


def _no_remote(uri):
    raise jsonschema.RefResolutionError("%s is not one of the checked files"
                                        % uri)


# Every $ref must land in a file loaded here: nothing is fetched.
NO_REMOTE = {scheme: _no_remote for scheme in ("file", "http", "https")}


# ------------------------------------------------------------- validation
def error_paths(errors):
    """Every JSON path a validation error (or one nested in anyOf/oneOf)
    points at; for `required` the missing member, for propertyNames the
    property itself, for `additionalProperties: false` each member the
    object does not name (as the C side reports it)."""
    paths = set()
    stack = list(errors)
    while stack:
        e = stack.pop()
        parts = list(e.absolute_path)
        paths.add(json_path(parts))
        if e.validator == "required" and isinstance(e.instance, dict):
            for name in e.validator_value:
                if name not in e.instance:
                    paths.add(json_path(parts + [name]))
        if "propertyNames" in e.absolute_schema_path and isinstance(
                e.instance, str):
            paths.add(json_path(parts + [e.instance]))
        if e.validator == "additionalProperties" and \
                e.validator_value is False and isinstance(e.instance, dict):
            named = e.schema.get("properties", {})
            for name in e.instance:
                if name not in named:
                    paths.add(json_path(parts + [name]))
        stack.extend(e.context or [])
    return paths


def envelope_errors(doc, schema_name, envelope):
    """The envelope rules (the C side's, section 2): returns (target, prefix,
    errors as (path, message))."""
    if envelope == "none":
        return doc, [], []
    if not isinstance(doc, dict):
        return doc, [], [("$", "a request is a JSON object")]
    errs = []
    if envelope == "bare":
        if "specversion" in doc:
            errs.append(("$.specversion", "a bare request has no specversion"))
        if "kind" not in doc:
            errs.append(("$.kind", "a bare request needs kind"))
        return doc, [], errs
    # structured CloudEvent
    if doc.get("specversion") != "1.0":
        errs.append(("$.specversion", "specversion must be \"1.0\""))
    if doc.get("type") != REQUEST_CE_TYPE[schema_name]:
        errs.append(("$.type", "type must be %s" % REQUEST_CE_TYPE[schema_name]))
    for attr in ("id", "source"):
        if not isinstance(doc.get(attr), str) or not doc[attr]:
            errs.append(("$." + attr, "%s must be a non-empty string" % attr))
    if "datacontenttype" in doc and doc["datacontenttype"] != "application/json":
        errs.append(("$.datacontenttype", "must be application/json"))
    if not isinstance(doc.get("data"), dict):
        errs.append(("$.data", "data must be the request object"))
        return None, ["data"], errs
    return doc["data"], ["data"], errs


class Checker:
    def __init__(self, results):
        self.r = results
        self.schemas = {}
        self.store = {}
        self.asyncapi = None

    # -- schemas
    def load_schemas(self):
        for name in SCHEMA_FILES:
            path = SCHEMAS / name
            what = "schema " + name
            try:
                schema = load_json_strict(path)
            except (OSError, InvalidJSON) as e:
                self.r.fail(what, "cannot load: %s" % e)
                continue
            try:
                Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                self.r.fail(what, "not a valid 2020-12 schema: %s" % e.message)
                continue
            if schema.get("$schema") != DRAFT:
                self.r.fail(what, "$schema is not %s" % DRAFT)
                continue
            for rx in collect_patterns(schema):
                try:
                    re.compile(ecma_to_python(rx))
                except re.error as e:
                    self.r.fail(what, "pattern %r: %s" % (rx, e))
                    break
            else:
                self.r.ok(what)
            self.schemas[name] = schema
            self.store[file_uri(path)] = schema
        extra = sorted(p.name for p in SCHEMAS.glob("*.json")
                       if p.name not in SCHEMA_FILES)
        self.r.check(not extra, "schemas/*.json all known",
                     "not checked by this script: %s" % extra)

    def validator_for(self, name):
        schema = self.schemas[name]
        resolver = RefResolver(file_uri(SCHEMAS / name), schema,
                               store=dict(self.store), handlers=NO_REMOTE)
        return Validator(schema, resolver=resolver)

    # -- asyncapi
    def load_asyncapi(self):
        what = "asyncapi.yaml"
        try:
            import yaml
        except ImportError:
            self.r.fail(what, "python3-yaml is not installed: cannot check it")
            return
        try:
            with open(ASYNCAPI, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            self.r.fail(what, "cannot parse: %s" % e)
            return
        if not self.r.check(isinstance(doc, dict) and
                            doc.get("asyncapi") == "3.0.0",
                            what + " is AsyncAPI 3.0.0",
                            "asyncapi: %r" % (doc or {}).get("asyncapi")):
            return
        self.asyncapi = doc
        self.store[file_uri(ASYNCAPI)] = doc
        refs = list(walk_refs(doc, []))
        self.r.check(refs, what + " has $refs", "no $ref at all")
        for where, ref in refs:
            label = "%s %s -> %s" % (what, where, ref)
            target, _, pointer = ref.partition("#")
            try:
                if target:
                    tpath = (ASYNCAPI.parent / target)
                    if not tpath.is_file():
                        raise KeyError("no file %s" % tpath)
                    if tpath.name not in self.schemas:
                        raise KeyError("%s is not one of the checked schemas"
                                       % target)
                    resolve_pointer(self.schemas[tpath.name], pointer)
                else:
                    resolve_pointer(doc, pointer)
            except (KeyError, IndexError, ValueError, TypeError) as e:
                self.r.fail(label, "does not resolve: %s" % e)
                continue
            self.r.ok(label)
        for where, mf in walk_multiformat(doc, []):
            label = "%s %s" % (what, where)
            if mf.get("schemaFormat") != SCHEMA_FORMAT:
                self.r.fail(label, "schemaFormat %r, want %r"
                            % (mf.get("schemaFormat"), SCHEMA_FORMAT))
                continue
            try:
                Draft202012Validator.check_schema(mf.get("schema"))
            except jsonschema.SchemaError as e:
                self.r.fail(label, "not a valid 2020-12 schema: %s" % e.message)
                continue
            self.r.ok(label)
        for schema_name, message in ASYNCAPI_MESSAGE.items():
            self.r.check(self.payload_schema(message) is not None,
                         "%s message %s" % (what, message),
                         "no components.messages.%s.payload.schema" % message)

    def payload_schema(self, message):
        try:
            return self.asyncapi["components"]["messages"][message][
                "payload"]["schema"]
        except (KeyError, TypeError):
            return None

    def asyncapi_verdict(self, message, doc):
        schema = self.payload_schema(message)
        resolver = RefResolver(file_uri(ASYNCAPI), self.asyncapi,
                               store=dict(self.store), handlers=NO_REMOTE)
        return Validator(schema, resolver=resolver).is_valid(doc)

    # -- examples
    def check_examples(self):
        try:
            manifest = load_json_strict(MANIFEST)
        except (OSError, InvalidJSON) as e:
            self.r.fail("manifest", "cannot load: %s" % e)
            return
        if not self.r.check(isinstance(manifest, list), "manifest is a list",
                            "want a JSON array of entries"):
            return
        listed = []
        for entry in manifest:
            f = entry.get("file") if isinstance(entry, dict) else None
            listed.append(f)
            self.check_example(entry)
        on_disk = sorted(str(p.relative_to(EXAMPLES))
                         for sub in ("valid", "invalid")
                         for p in (EXAMPLES / sub).glob("*") if p.is_file())
        others = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*")
                        if p.is_file() and p != MANIFEST and
                        p.parent not in (EXAMPLES / "valid",
                                         EXAMPLES / "invalid"))
        self.r.check(not others, "examples/ holds only valid/ and invalid/",
                     "unexpected files: %s" % others)
        missing = sorted(set(on_disk) - set(listed))
        self.r.check(not missing, "every example file is in the manifest",
                     "not in the manifest: %s" % missing)
        gone = sorted(f for f in set(listed) - set(on_disk) if f)
        self.r.check(not gone, "every manifest entry has a file",
                     "no such file: %s" % gone)
        dups = sorted({f for f in listed if listed.count(f) > 1})
        self.r.check(not dups, "manifest lists each file once",
                     "listed twice: %s" % dups)
        self.r.check(listed and any(e.get("valid") for e in manifest) and
                     any(not e.get("valid") for e in manifest),
                     "manifest has valid and invalid examples", "one kind only")

    def check_example(self, e):
        what = "example %s" % (e.get("file") if isinstance(e, dict) else e)
        problem = manifest_entry_problem(e)
        if problem:
            self.r.fail(what, "bad manifest entry: %s" % problem)
            return
        name, envelope, want_valid = e["schema"], e["envelope"], e["valid"]
        c_only = e.get("c_only", False)
        if name not in self.schemas:
            self.r.fail(what, "schema %s did not load" % name)
            return
        path = EXAMPLES / e["file"]
        try:
            doc = load_json_strict(path)
        except OSError as ex:
            self.r.fail(what, "cannot read: %s" % ex)
            return
        except InvalidJSON as ex:
            self.r.check(not want_valid and e.get("error") == "invalid_json",
                         what, "not JSON (%s) but the manifest says %s" %
                         (ex, "valid" if want_valid else e.get("error")))
            return
        if e.get("error") == "invalid_json":
            self.r.fail(what, "parses as JSON but the manifest says invalid_json")
            return

        target, prefix, env_errs = envelope_errors(doc, name, envelope)
        schema_errs = []
        try:
            if target is not None:
                schema_errs = list(self.validator_for(name).iter_errors(target))
        except jsonschema.RefResolutionError as ex:
            self.r.fail(what, "a $ref does not resolve: %s" % ex)
            return
        schema_valid = not env_errs and not schema_errs
        paths = {p for p, _ in env_errs}
        paths |= {json_path(prefix) + p[1:] for p in error_paths(schema_errs)}

        if want_valid or c_only:
            if not schema_valid:
                first = env_errs[0] if env_errs else (
                    json_path(prefix + list(schema_errs[0].absolute_path)),
                    schema_errs[0].message)
                self.r.fail(what, "the schema refuses it (%s: %s) but the "
                            "manifest says %s" % (
                                first[0], first[1][:200],
                                "valid" if want_valid else "c_only"))
                return
        else:
            if schema_valid:
                self.r.fail(what, "the schema accepts it but the manifest says "
                            "invalid (%s at %s)" % (e["error"], e["field"]))
                return
            if e["field"] not in paths:
                self.r.fail(what, "invalid, but no error at %s; errors at %s"
                            % (e["field"], sorted(paths)))
                return

        message = ASYNCAPI_MESSAGE.get(name)
        if self.asyncapi is not None and message:
            whole = doc if envelope != "none" else target
            try:
                verdict = self.asyncapi_verdict(message, whole)
            except jsonschema.RefResolutionError as ex:
                self.r.fail(what, "AsyncAPI message %s: a $ref does not "
                            "resolve: %s" % (message, ex))
                return
            if verdict != schema_valid:
                self.r.fail(what, "AsyncAPI message %s says %s, the schema %s"
                            % (message, verdict, schema_valid))
                return
        self.r.ok(what)


def manifest_entry_problem(e):
    if not isinstance(e, dict):
        return "not an object"
    for k in ("file", "schema", "envelope"):
        if not isinstance(e.get(k), str):
            return "%s missing" % k
    if not isinstance(e.get("valid"), bool):
        return "valid must be true or false"
    if e["schema"] not in SCHEMA_FILES:
        return "unknown schema %s" % e["schema"]
    if e["envelope"] not in ENVELOPES:
        return "envelope must be one of %s" % sorted(ENVELOPES)
    if e["envelope"] != "none" and e["schema"] not in REQUEST_KIND:
        return "only requests come in an envelope"
    if e["envelope"] == "none" and e["schema"] in REQUEST_KIND:
        return "a request is bare or in a cloudevent"
    top = e["file"].split("/")[0]
    if top != ("valid" if e["valid"] else "invalid"):
        return "a %s example belongs in %s/" % (
            "valid" if e["valid"] else "invalid",
            "valid" if e["valid"] else "invalid")
    if "c_only" in e and (not isinstance(e["c_only"], bool) or
                          (e["c_only"] and e["valid"])):
        return "c_only is for invalid examples only"
    if not e["valid"]:
        if e.get("error") not in ERROR_CODES:
            return "error %r is not a known code" % e.get("error")
        if not isinstance(e.get("field"), str) or not e["field"].startswith("$"):
            return "field must be a JSON path starting with $"
    elif "error" in e or "field" in e:
        return "a valid example has no error or field"
    return None


def collect_patterns(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "pattern" and isinstance(v, str):
                yield v
            else:
                yield from collect_patterns(v)
    elif isinstance(node, list):
        for v in node:
            yield from collect_patterns(v)


def walk_refs(node, where):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield "/".join(where), v
            else:
                yield from walk_refs(v, where + [str(k)])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_refs(v, where + [str(i)])


def walk_multiformat(node, where):
    """AsyncAPI Multi Format Schema Objects: {schemaFormat, schema}."""
    if isinstance(node, dict):
        if "schemaFormat" in node or ("schema" in node and
                                      where and where[-1] in ("payload",
                                                              "headers")):
            yield "/".join(where), node
            return
        for k, v in node.items():
            yield from walk_multiformat(v, where + [str(k)])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_multiformat(v, where + [str(i)])


def print_manifest():
    manifest = load_json_strict(MANIFEST)
    for e in manifest:
        print("\t".join([
            e["file"], e["schema"], "valid" if e["valid"] else "invalid",
            e["envelope"], e.get("error") or "-", e.get("field") or "-",
            "c_only" if e.get("c_only") else "-",
        ]))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--print-manifest", action="store_true",
                    help="print the manifest as tab-separated lines and exit")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every passing check too")
    args = ap.parse_args()
    if args.print_manifest:
        print_manifest()
        return 0
    r = Results(args.verbose)
    c = Checker(r)
    c.load_schemas()
    c.load_asyncapi()
    c.check_examples()
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
