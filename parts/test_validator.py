"""Tests of the JSON Schema validator part: the official suite, the Go seed's messages, JSON
truths, a second opinion from ``jsonschema``, and the schemas it refuses."""

from __future__ import annotations

import glob
import json
import os
import sys
import unittest
from typing import Any

import parts.validator as at

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFORMANCE = os.path.join(ROOT, "..", "shared", "conformance")
SUITE = os.path.join(CONFORMANCE, "json-schema-test-suite")
CORPUS = os.path.join(CONFORMANCE, "agenttool-schema")
DRAFT7 = "http://json-schema.org/draft-07/schema#"
# More examples for a long local run: AGENTTOOL_EXAMPLES_SCALE=50 python -m unittest ...
SCALE = int(os.environ.get("AGENTTOOL_EXAMPLES_SCALE", "1"))

try:
    import jsonschema
except ImportError:  # pragma: no cover - CI has it
    jsonschema = None
try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - CI has it
    st = None


def error_of(schema: Any, value: Any) -> str:
    """``str()`` of the ValidationError ``value`` raises, or ``""`` when it is accepted."""
    try:
        at.validator(schema).validate(value)
    except at.ValidationError as err:
        return str(err)
    return ""


# ---------------------------------------------------------------------------------------------
# 1. JSON-Schema-Test-Suite
# ---------------------------------------------------------------------------------------------

# Optional files run on top of the required ones (the others are skipped: see SKIP_FILES).
OPTIONAL = [
    "draft2020-12/optional/anchor.json",
    "draft2020-12/optional/bignum.json",
    "draft2020-12/optional/dependencies-compatibility.json",
    "draft2020-12/optional/ecmascript-regex.json",
    "draft2020-12/optional/float-overflow.json",
    "draft2020-12/optional/id.json",
    "draft2020-12/optional/no-schema.json",
    "draft2020-12/optional/non-bmp-regex.json",
    "draft2020-12/optional/refOfUnknownKeyword.json",
    "draft2020-12/optional/unknownKeyword.json",
    "draft7/optional/bignum.json",
    "draft7/optional/ecmascript-regex.json",
    "draft7/optional/float-overflow.json",
    "draft7/optional/id.json",
    "draft7/optional/non-bmp-regex.json",
    "draft7/optional/unknownKeyword.json",
]
REMOTE = "a remote $ref needs the suite's HTTP server or a registry; refused at compile time"
SKIP_FILES = {
    "draft2020-12/refRemote.json": REMOTE,
    "draft7/refRemote.json": REMOTE,
    "draft2020-12/dynamicRef.json": "$dynamicRef is refused at compile time (not implemented)",
    "draft2020-12/unevaluatedItems.json": "unevaluatedItems is refused at compile time",
    "draft2020-12/unevaluatedProperties.json": "unevaluatedProperties is refused at compile time",
    "draft2020-12/vocabulary.json": "custom metaschemas ($schema on localhost) are refused",
    "draft2020-12/optional/cross-draft.json": REMOTE,
    "draft7/optional/cross-draft.json": REMOTE,
    "draft2020-12/optional/dynamicRef.json": "$dynamicRef is refused at compile time",
    "draft2020-12/optional/format-assertion.json": "custom metaschemas are refused",
    "draft2020-12/optional/format/*": "format is an annotation only",
    "draft7/optional/format/*": "format is an annotation only",
    "draft7/optional/content.json": "contentMediaType/contentEncoding are annotations only",
}
METASCHEMA = "refers to the draft's metaschema, a remote document; refused at compile time"
UNEVALUATED = "unevaluatedProperties is refused at compile time"
SKIP_CASES = {
    (
        "draft2020-12/not.json",
        "collect annotations inside a 'not', even if collection is disabled",
    ): UNEVALUATED,
    ("draft2020-12/ref.json", "ref creates new scope when adjacent to keywords"): UNEVALUATED,
    ("draft2020-12/defs.json", "validate definition against metaschema"): METASCHEMA,
    ("draft2020-12/ref.json", "remote ref, containing refs itself"): METASCHEMA,
    ("draft7/definitions.json", "validate definition against metaschema"): METASCHEMA,
    ("draft7/ref.json", "remote ref, containing refs itself"): METASCHEMA,
}


@unittest.skipUnless(os.path.isdir(SUITE), f"the test suite is absent ({SUITE})")
class TestSuite(unittest.TestCase):
    def test_every_supported_case_of_draft2020_12_and_draft7_passes(self) -> None:
        files = sorted(glob.glob(os.path.join(SUITE, "draft2020-12", "*.json")))
        files += sorted(glob.glob(os.path.join(SUITE, "draft7", "*.json")))
        files += [os.path.join(SUITE, name) for name in OPTIONAL]
        passed, skipped, failures = 0, [], []
        for path in files:
            name = os.path.relpath(path, SUITE).replace(os.sep, "/")
            if name in SKIP_FILES:
                skipped.append(f"{name}: {SKIP_FILES[name]}")
                continue
            draft7 = name.startswith("draft7/")
            with open(path, encoding="utf-8") as f:
                cases = json.load(f)
            for case in cases:
                schema = case["schema"]
                if draft7 and isinstance(schema, dict):  # the draft 7 files carry no $schema
                    schema = dict(schema, **{"$schema": DRAFT7})
                reason = SKIP_CASES.get((name, case["description"]))
                try:
                    check = at.validator(schema)
                except at.SchemaError as err:
                    if reason is None:
                        failures.append(f"{name} | {case['description']}: refused: {err}")
                    else:
                        skipped.append(f"{name} | {case['description']}: {reason}")
                    continue
                if reason is not None:
                    failures.append(f"{name} | {case['description']}: listed as skipped, compiles")
                for test in case["tests"]:
                    try:
                        check.validate(test["data"])
                        valid = True
                    except at.ValidationError:
                        valid = False
                    if valid == test["valid"]:
                        passed += 1
                    else:
                        failures.append(
                            f"{name} | {case['description']} | {test['description']}:"
                            f" expected valid={test['valid']}"
                        )
        for pattern, reason in SKIP_FILES.items():
            if pattern.endswith("*"):
                skipped.append(f"{pattern}: {reason}")
        print(
            f"\nJSON-Schema-Test-Suite: {passed} tests passed, {len(failures)} failed,"
            f" {len(skipped)} files or cases skipped:",
            file=sys.stderr,
        )
        for line in skipped:
            print(f"  skip {line}", file=sys.stderr)
        self.assertEqual(failures, [])
        self.assertGreater(passed, 2000)


# ---------------------------------------------------------------------------------------------
# 2. Messages (the Go seed's table, then this validator's own forms)
# ---------------------------------------------------------------------------------------------

READ_FILE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "max_bytes": {"type": "integer"}},
    "required": ["path"],
}
ARGS = {
    "type": "object",
    "properties": {
        "flag": {"type": "boolean"},
        "ratio": {"type": "number"},
        "nested": {
            "type": "object",
            "properties": {"deep": {"type": "boolean"}},
            "required": ["deep"],
        },
        "level": {"type": "string", "enum": ["low", "high"]},
        "word": {"type": "integer", "enum": [1, 2]},
        "count": {"type": "integer", "enum": [1, 2, 3]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "list": {
            "type": "array",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "limit": {"type": ["integer", "null"]},
        "maybe": {"type": ["string", "null"], "enum": ["a"]},
        "strict_enum": {"type": "string", "enum": ["a", None]},
        "nothing": {"type": "null"},
        "anything": {},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
STRICT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "level": {"type": "string"},
        "limit": {"type": ["integer", "null"]},
    },
    "required": ["query", "level", "limit"],
    "additionalProperties": False,
}


class TestGoMessages(unittest.TestCase):
    """The message forms the Go seed's tests pin, word for word."""

    def check(self, schema: Any, value: Any, expected: str) -> None:
        self.assertEqual(error_of(schema, value), expected)

    def test_empty_arguments_miss_the_required_property(self) -> None:
        self.check(READ_FILE, {}, 'invalid arguments: missing required property "path"')

    def test_wrong_types_name_the_expected_type_and_the_value(self) -> None:
        self.check(READ_FILE, {"path": 1}, "invalid arguments: path: expected string, got 1")
        self.check(ARGS, {"flag": "yes"}, 'invalid arguments: flag: expected boolean, got "yes"')
        self.check(ARGS, {"ratio": "high"}, 'invalid arguments: ratio: expected number, got "high"')
        self.check(ARGS, {"nested": []}, "invalid arguments: nested: expected object, got array")
        self.check(ARGS, {"count": None}, "invalid arguments: count: expected integer, got null")
        self.check(ARGS, {"flag": {}}, "invalid arguments: flag: expected boolean, got object")
        self.check(ARGS, {"flag": 1.5}, "invalid arguments: flag: expected boolean, got 1.5")

    def test_enum_lists_the_values_as_compact_json(self) -> None:
        self.check(
            ARGS,
            {"level": "mid"},
            'invalid arguments: level: expected one of ["low", "high"], got "mid"',
        )
        self.check(ARGS, {"word": 3}, "invalid arguments: word: expected one of [1, 2], got 3")

    def test_enum_is_checked_before_type(self) -> None:
        self.check(ARGS, {"word": 1.5}, "invalid arguments: word: expected one of [1, 2], got 1.5")

    def test_two_point_zero_is_an_integer(self) -> None:
        self.check(ARGS, {"word": 2.0}, "")
        self.check(READ_FILE, {"path": "p", "max_bytes": 2.0}, "")

    def test_paths_are_dotted_with_indexes(self) -> None:
        self.check(ARGS, {"tags": ["a", 2]}, "invalid arguments: tags[1]: expected string, got 2")
        self.check(
            ARGS,
            {"nested": {"deep": "x"}},
            'invalid arguments: nested.deep: expected boolean, got "x"',
        )
        self.check(
            ARGS, {"list": [{"name": 1}]}, "invalid arguments: list[0].name: expected string, got 1"
        )

    def test_missing_required_is_reported_at_the_object(self) -> None:
        self.check(
            ARGS, {"nested": {}}, 'invalid arguments: nested: missing required property "deep"'
        )

    def test_extra_properties_are_ignored_unless_closed(self) -> None:
        self.check(READ_FILE, {"path": "p", "bogus": 1}, "")
        self.check(
            STRICT,
            {"query": "q", "level": "l", "limit": None, "bogus": 1},
            'invalid arguments: unexpected property "bogus"',
        )

    def test_required_in_list_order_then_properties_in_sorted_order(self) -> None:
        self.check(STRICT, {}, 'invalid arguments: missing required property "query"')
        self.check(STRICT, {"query": "q"}, 'invalid arguments: missing required property "level"')
        self.check(
            STRICT,
            {"query": 1, "level": 2, "limit": None},
            "invalid arguments: level: expected string, got 2",
        )
        # a property error sorting before an unexpected key wins, and the other way round
        self.check(
            STRICT,
            {"query": "q", "level": 2, "limit": None, "zzz": 1},
            "invalid arguments: level: expected string, got 2",
        )
        self.check(
            STRICT,
            {"query": 1, "level": "l", "limit": None, "bogus": 1},
            'invalid arguments: unexpected property "bogus"',
        )

    def test_strict_nullable_accepts_null(self) -> None:
        self.check(STRICT, {"query": "q", "level": "l", "limit": None}, "")
        self.check(ARGS, {"limit": None}, "")

    def test_a_type_union_names_every_type(self) -> None:
        self.check(
            ARGS, {"limit": "x"}, 'invalid arguments: limit: expected integer or null, got "x"'
        )

    def test_nullable_enum_without_null_rejects_null_by_enum(self) -> None:
        self.check(
            ARGS, {"maybe": None}, 'invalid arguments: maybe: expected one of ["a"], got null'
        )

    def test_enum_listing_null_does_not_make_the_type_nullable(self) -> None:
        self.check(
            ARGS, {"strict_enum": None}, "invalid arguments: strict_enum: expected string, got null"
        )

    def test_type_null_rejects_other_values(self) -> None:
        self.assertIn("expected null", error_of(ARGS, {"nothing": 0}))

    def test_untyped_schema_accepts_anything(self) -> None:
        for value in (None, 1, "x", [1, {}], {"a": [True]}):
            self.check(ARGS, {"anything": value}, "")
            self.check({}, value, "")
            self.check(True, value, "")

    def test_bad_json_is_named(self) -> None:
        err = error_of_json(READ_FILE, '{"path": ')
        self.assertTrue(err.startswith("invalid arguments: not valid JSON: "), err)

    def test_unknown_type_name_is_a_schema_error(self) -> None:
        with self.assertRaises(at.SchemaError) as caught:
            at.validator({"type": "object", "properties": {"a": {"type": "strng"}}})
        self.assertIn('"strng" is not a JSON Schema type', str(caught.exception))


def error_of_json(schema: Any, text: str | bytes) -> str:
    try:
        at.validator(schema).validate_json(text)
    except at.ValidationError as err:
        return str(err)
    return ""


class TestOwnMessages(unittest.TestCase):
    """Messages for the keywords the Go seed does not have, in the same style."""

    def check(self, schema: Any, value: Any, expected: str) -> None:
        self.assertEqual(error_of(schema, value), expected and "invalid arguments: " + expected)

    def test_counts(self) -> None:
        self.check({"minItems": 1}, [], "expected at least 1 item, got 0")
        self.check({"maxItems": 2}, [1, 2, 3], "expected at most 2 items, got 3")
        self.check({"maxLength": 10}, "x" * 12, "expected at most 10 characters, got 12")
        self.check({"minLength": 2}, "\U0001f600", "expected at least 2 characters, got 1")
        self.check({"minProperties": 1}, {}, "expected at least 1 property, got 0")
        self.check({"maxProperties": 1}, {"a": 1, "b": 2}, "expected at most 1 property, got 2")

    def test_numbers(self) -> None:
        self.check({"minimum": 0}, -1, "expected a number >= 0, got -1")
        self.check({"exclusiveMinimum": 0}, 0, "expected a number > 0, got 0")
        self.check({"maximum": 1.5}, 2, "expected a number <= 1.5, got 2")
        self.check({"exclusiveMaximum": 10}, 10.0, "expected a number < 10, got 10.0")
        self.check({"multipleOf": 5}, 7, "expected a multiple of 5, got 7")
        self.check({"multipleOf": 0.01}, 0.123, "expected a multiple of 0.01, got 0.123")

    def test_strings(self) -> None:
        self.check({"pattern": "^[a-z]+$"}, "A1", 'expected a string matching "^[a-z]+$", got "A1"')
        long = "y" * 100
        self.check({"type": "integer"}, long, f'expected integer, got "{"y" * 57}..."')

    def test_unique_items_names_the_equal_pair(self) -> None:
        self.check(
            {"uniqueItems": True}, [1, "a", 1.0], "expected unique items; items 0 and 2 are equal"
        )
        self.check({"uniqueItems": True}, [1, True, {"a": 0}, {"a": False}], "")

    def test_const_and_not(self) -> None:
        self.check({"const": "x"}, "y", 'expected exactly "x", got "y"')
        self.check(
            {"not": {"type": "string"}},
            "s",
            'expected a value not matching {"type":"string"}, got "s"',
        )

    def test_any_of_reports_the_branch_of_the_value_type(self) -> None:
        schema = {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            ]
        }
        self.check(schema, {}, 'missing required property "path"')
        self.check(schema, {"path": 1}, "path: expected string, got 1")
        self.check(
            schema,
            3,
            "expected a value matching one of the 2 allowed shapes"
            ' (string, or object with "path"), got 3',
        )
        nested = {"properties": {"target": schema}}
        self.assertEqual(
            error_of(nested, {"target": {"path": 1}}),
            "invalid arguments: target.path: expected string, got 1",
        )

    def test_any_of_bare_types_reads_like_a_type_union(self) -> None:
        nullable = {"anyOf": [{"type": "string", "description": "d"}, {"type": "null"}]}
        self.check(nullable, 1, "expected string or null, got 1")
        self.check(
            {"anyOf": [{"type": "integer"}, {"type": "string"}]}, 1.5, "expected integer, got 1.5"
        )

    def test_subschemas_are_checked_after_the_object_own_keywords(self) -> None:
        schema = {
            "properties": {"a": {"type": "string"}},
            "if": {"required": ["a"]},
            "then": {"required": ["b"]},
        }
        self.check(schema, {"a": 1}, "a: expected string, got 1")
        self.check(schema, {"a": "s"}, 'missing required property "b"')

    def test_one_of_with_several_matches(self) -> None:
        self.check(
            {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
            1,
            "expected exactly one of the allowed shapes to match, but 2 did",
        )

    def test_object_keywords(self) -> None:
        self.check(
            {"dependentRequired": {"card": ["billing"]}},
            {"card": 1},
            'missing required property "billing" (required when "card" is present)',
        )
        self.check(
            {"propertyNames": {"maxLength": 3}},
            {"abcd": 1},
            'invalid property name "abcd": expected at most 3 characters, got 4',
        )
        self.check(
            {"patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
            {"x-a": "ok", "y": 1},
            'unexpected property "y"',
        )
        self.check({"properties": {"a": False}}, {"a": 1}, 'unexpected property "a"')

    def test_array_keywords(self) -> None:
        self.check(
            {"prefixItems": [{"type": "string"}], "items": False},
            ["a", 1],
            "expected at most 1 item, got 2",
        )
        self.check(
            {"contains": {"type": "string"}},
            [1, 2],
            'expected at least 1 item matching the "contains" schema {"type":"string"}, got 0',
        )
        self.check(
            {"contains": {"type": "string"}, "maxContains": 1},
            ["a", "b"],
            'expected at most 1 item matching the "contains" schema {"type":"string"}, got 2',
        )
        self.check(
            {"prefixItems": [True], "items": {"type": "string"}},
            [1, "a", 2],
            "[2]: expected string, got 2",
        )
        self.check(
            {"items": {"type": "integer"}}, [1, 1, "x", 1, "x"], '[2]: expected integer, got "x"'
        )

    def test_keys_that_are_not_identifiers_are_quoted(self) -> None:
        schema = {"properties": {"headers": {"additionalProperties": {"type": "string"}}}}
        self.assertEqual(
            error_of(schema, {"headers": {"content-type": 1}}),
            'invalid arguments: headers["content-type"]: expected string, got 1',
        )
        self.assertEqual(
            error_of({"properties": {"a b": {"type": "string"}}}, {"a b": 1}),
            'invalid arguments: ["a b"]: expected string, got 1',
        )

    def test_false_schema_refuses_everything(self) -> None:
        self.check(False, {}, "no value is allowed here")

    def test_errors_through_references_keep_their_path(self) -> None:
        tree = {
            "$ref": "#/$defs/node",
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                        "value": {"type": "integer"},
                    },
                }
            },
        }
        self.assertEqual(
            error_of(tree, {"children": [{"children": [{}, {"value": "x"}]}]}),
            'invalid arguments: children[0].children[1].value: expected integer, got "x"',
        )

    def test_validation_error_is_a_value_error_with_path_and_msg(self) -> None:
        with self.assertRaises(ValueError) as caught:
            at.validator(ARGS).validate({"tags": [1]})
        err = caught.exception
        assert isinstance(err, at.ValidationError)
        self.assertEqual((err.path, err.msg), ("tags[0]", "expected string, got 1"))


# ---------------------------------------------------------------------------------------------
# 3. JSON truths, deep nesting, the JSON text
# ---------------------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


class TestJsonTruths(unittest.TestCase):
    def test_true_is_not_an_integer_nor_a_number(self) -> None:
        self.assertTrue(error_of({"type": "integer"}, True))
        self.assertTrue(error_of({"type": "number"}, False))
        self.assertEqual(error_of({"type": "boolean"}, True), "")
        self.assertTrue(error_of({"type": "boolean"}, 1))

    def test_one_point_zero_is_an_integer_and_big_integers_are_fine(self) -> None:
        self.assertEqual(error_of({"type": "integer"}, 1.0), "")
        self.assertTrue(error_of({"type": "integer"}, 1.5))
        self.assertEqual(error_of({"type": "integer", "minimum": 10**30}, 10**40), "")
        self.assertEqual(at.validator({"type": "integer"}).validate_json("1" * 400), int("1" * 400))

    def test_json_equality(self) -> None:
        self.assertEqual(error_of({"enum": [1]}, 1.0), "")
        self.assertTrue(error_of({"enum": [1]}, True))
        self.assertTrue(error_of({"const": False}, 0))
        self.assertTrue(error_of({"const": {"a": False}}, {"a": 0}))
        self.assertEqual(error_of({"const": {"a": [1]}}, {"a": [1.0]}), "")

    def test_deep_json_text_is_a_validation_error(self) -> None:
        text = "[" * 100_000 + "]" * 100_000
        for schema in ({}, {"type": "array"}):
            self.assertEqual(error_of_json(schema, text), "invalid arguments: nesting too deep")
        text = '{"a":' * 100_000 + "1" + "}" * 100_000
        self.assertEqual(error_of_json({}, text.encode()), "invalid arguments: nesting too deep")

    def test_deep_python_values_are_a_validation_error(self) -> None:
        value = nested(100_000)
        deep = "invalid arguments: nesting too deep"
        self.assertEqual(
            error_of(
                {"$ref": "#/$defs/a", "$defs": {"a": {"items": {"$ref": "#/$defs/a"}}}}, value
            ),
            deep,
        )
        self.assertEqual(error_of({"items": {"$ref": "#"}}, value), deep)
        self.assertEqual(error_of({"enum": [1]}, value), deep)
        self.assertEqual(error_of({"uniqueItems": True}, [value, 1]), deep)
        self.assertEqual(error_of({}, value), "")  # nothing to check: nothing walked

    def test_nan_and_infinity_are_not_json(self) -> None:
        for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
            self.assertEqual(
                error_of_json({}, text).split(":")[:2], ["invalid arguments", " not valid JSON"]
            )
        self.assertIn("NaN is not a JSON number", error_of_json({}, "NaN"))

    def test_invalid_json(self) -> None:
        for text in ("", "{", "[1,]", "{'a': 1}", "1 2", b"\xff\xfe\x00"):
            self.assertTrue(
                error_of_json({}, text).startswith("invalid arguments: not valid JSON: "), text
            )

    def test_validate_json_returns_the_parsed_value_from_str_or_bytes(self) -> None:
        check = at.validator(READ_FILE)
        self.assertEqual(check.validate_json('{"path": "p"}'), {"path": "p"})
        self.assertEqual(check.validate_json(b'{"path": "\xc3\xa9"}'), {"path": "\u00e9"})
        self.assertEqual(check.validate_json('{"path": "p"}'.encode("utf-16")), {"path": "p"})
        self.assertEqual(
            error_of_json(READ_FILE, b'{"path": 1}'),
            "invalid arguments: path: expected string, got 1",
        )

    def test_validator_keeps_the_schema_and_compiles_equal_schemas_once(self) -> None:
        schema = {"type": "string"}
        first, second = at.validator(schema), at.validator(dict(schema))
        self.assertIs(first.schema, schema)
        self.assertIs(first.validate, second.validate)


# ---------------------------------------------------------------------------------------------
# 4. A second opinion: jsonschema agrees on accept/reject
# ---------------------------------------------------------------------------------------------


def corpus_schemas() -> list[Any]:
    names = sorted(glob.glob(os.path.join(CORPUS, "*.json")))
    out = []
    for name in names:
        if os.path.basename(name) == "manifest.json":
            continue
        with open(name, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


if st is not None:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-5, 5)
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from([0.5, 1.0, 2.0, -1.5, 1e300])
        | st.text(alphabet="abxy-_0 \u00e9", max_size=5)
    )
    json_values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["a", "b", "c", "x-1", "name", "path"]), inner, max_size=4
            )
        ),
        max_leaves=12,
    )

    def instances(schema: Any, depth: int = 0) -> Any:
        """Values shaped after ``schema`` (often valid, often a little wrong), or any JSON."""
        if not isinstance(schema, dict) or depth > 4:
            return json_values
        options = [json_values]
        if "enum" in schema:
            options.append(st.sampled_from(schema["enum"]))
        if "const" in schema:
            options.append(st.just(schema["const"]))
        kinds = schema.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        props = schema.get("properties", {})
        if "object" in kinds or props:
            optional = {k: instances(s, depth + 1) for k, s in props.items()}
            extra = schema.get("additionalProperties")
            optional["zz"] = instances(extra, depth + 1) if isinstance(extra, dict) else json_values
            options.append(st.fixed_dictionaries({}, optional=optional))
        if "array" in kinds or "items" in schema:
            options.append(st.lists(instances(schema.get("items"), depth + 1), max_size=4))
        for name, strategy in (
            ("string", st.text(alphabet="abcxyz0", max_size=6)),
            ("integer", st.integers(-10, 10)),
            ("number", st.floats(-10, 10) | st.integers(-10, 10)),
            ("boolean", st.booleans()),
            ("null", st.none()),
        ):
            if name in kinds:
                options.append(strategy)
        for kw in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(kw, []):
                options.append(instances(sub, depth + 1))
        return st.one_of(options)

    leaf_schemas = st.one_of(
        st.booleans(),
        st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(
                    [
                        "string",
                        "integer",
                        "number",
                        "boolean",
                        "null",
                        "object",
                        "array",
                        ["integer", "null"],
                        ["string", "array"],
                    ]
                ),
                "enum": st.lists(scalars, min_size=1, max_size=3),
                "const": scalars,
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "pattern": st.sampled_from(["^a", "b", "[0-9]", "^[a-c]*", "x+y"]),
                "minimum": st.integers(-3, 3) | st.sampled_from([0.5, -1.5]),
                "maximum": st.integers(-3, 3),
                "exclusiveMinimum": st.integers(-3, 3),
                "exclusiveMaximum": st.sampled_from([2, 2.5, 10**20]),
                "multipleOf": st.sampled_from([1, 2, 3, 0.5]),
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(0, 3),
                "uniqueItems": st.booleans(),
                "minProperties": st.integers(0, 2),
                "maxProperties": st.integers(0, 3),
                "required": st.lists(st.sampled_from(["a", "b", "name"]), max_size=2, unique=True),
                "dependentRequired": st.just({"a": ["b"]}),
            },
        ),
    )

    def compound(inner: Any) -> Any:
        names = st.sampled_from(["a", "b", "c", "name", "path", "x-1"])
        return st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["object", "array", ["object", "null"]]),
                "properties": st.dictionaries(names, inner, max_size=3),
                "patternProperties": st.dictionaries(
                    st.sampled_from(["^x-", "a"]), inner, max_size=1
                ),
                "additionalProperties": inner,
                "propertyNames": st.just({"maxLength": 3}),
                "items": inner,
                "prefixItems": st.lists(inner, max_size=2),
                "contains": inner,
                "minContains": st.integers(0, 2),
                "maxContains": st.integers(0, 2),
                "allOf": st.lists(inner, min_size=1, max_size=2),
                "anyOf": st.lists(inner, min_size=1, max_size=2),
                "oneOf": st.lists(inner, min_size=1, max_size=2),
                "not": inner,
                "if": inner,
                "then": inner,
                "else": inner,
                "dependentSchemas": st.dictionaries(names, inner, max_size=1),
                "required": st.lists(names, max_size=2, unique=True),
            },
        )

    random_schemas = st.recursive(leaf_schemas, compound, max_leaves=6)


@unittest.skipIf(jsonschema is None or st is None, "jsonschema and hypothesis are not installed")
class TestSecondOpinion(unittest.TestCase):
    """agenttool and jsonschema (Draft202012Validator) accept and reject the same values."""

    def agree(self, schema: Any, value: Any) -> None:
        ours = error_of(schema, value) == ""
        theirs = jsonschema.Draft202012Validator(schema).is_valid(value)
        self.assertEqual(ours, theirs, f"schema={json.dumps(schema)} value={value!r}")

    @unittest.skipUnless(os.path.isdir(CORPUS), "the schema corpus is absent")
    def test_corpus_schemas(self) -> None:
        for schema in corpus_schemas():
            self.check_instances(schema)

    def check_instances(self, schema: Any) -> None:
        @settings(max_examples=25 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
        @given(instances(schema))
        def run(value: Any) -> None:
            self.agree(schema, value)

        run()

    def test_generated_schemas(self) -> None:
        @settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def run(data: Any) -> None:
            schema = data.draw(random_schemas)
            for _ in range(3):
                self.agree(schema, data.draw(instances(schema)))

        run()


# ---------------------------------------------------------------------------------------------
# 5. Schemas refused when compiled, naming the keyword
# ---------------------------------------------------------------------------------------------


class TestSchemaErrors(unittest.TestCase):
    def refused(self, schema: Any, *needles: str) -> None:
        with self.assertRaises(at.SchemaError) as caught:
            at.validator(schema)
        for needle in needles:
            self.assertIn(needle, str(caught.exception))

    def test_remote_and_unresolvable_refs(self) -> None:
        self.refused({"$ref": "https://example.com/other.json"}, '"$ref"', "outside this schema")
        self.refused({"$ref": "#/$defs/missing"}, '"$ref"', "does not resolve")
        self.refused({"$ref": "#nowhere"}, '"$ref"', "does not resolve")
        self.refused({"properties": {"a": {"$ref": 5}}}, '"$ref"', "#/properties/a")

    def test_unknown_schema_uri(self) -> None:
        self.refused({"$schema": "http://json-schema.org/draft-04/schema#"}, '"$schema"')
        self.refused({"$schema": 7}, '"$schema"')

    def test_keywords_not_implemented(self) -> None:
        self.refused({"unevaluatedProperties": False}, '"unevaluatedProperties"')
        self.refused({"items": {"unevaluatedItems": {}}}, '"unevaluatedItems"', "#/items")
        self.refused({"$dynamicRef": "#a"}, '"$dynamicRef"')
        self.assertEqual(error_of({"unevaluatedProperties": True}, {"a": 1}), "")

    def test_keyword_values_of_the_wrong_type(self) -> None:
        self.refused({"minLength": "3"}, '"minLength"', "non-negative integer")
        self.refused({"minItems": -1}, '"minItems"')
        self.refused({"maximum": "10"}, '"maximum"')
        self.refused({"exclusiveMinimum": True}, '"exclusiveMinimum"', "draft 4")
        self.refused({"multipleOf": 0}, '"multipleOf"')
        self.refused({"required": "a"}, '"required"')
        self.refused({"properties": []}, '"properties"')
        self.refused({"enum": "a"}, '"enum"')
        self.refused({"anyOf": []}, '"anyOf"')
        self.refused({"uniqueItems": 1}, '"uniqueItems"')
        self.refused({"type": []}, '"type"')
        self.refused({"not": 3}, "#/not")
        self.refused(3, "object or a boolean")

    def test_invalid_patterns(self) -> None:
        self.refused({"pattern": "(unclosed"}, '"pattern"', "not a valid regex")
        self.refused({"patternProperties": {"[": {}}}, '"patternProperties"')
        self.refused({"pattern": "\\p{Greek}"}, '"pattern"')

    def test_annotations_and_unknown_keywords_are_ignored(self) -> None:
        schema = {
            "title": "t",
            "description": "d",
            "default": 1,
            "examples": [1],
            "$comment": "c",
            "format": "date-time",
            "x-vendor": {"type": "string"},
            "deprecated": True,
        }
        self.assertEqual(error_of(schema, "not a date"), "")


class TestDrafts(unittest.TestCase):
    def test_draft7_ignores_ref_siblings_and_2020_keywords(self) -> None:
        schema = {
            "$schema": DRAFT7,
            "definitions": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}},
        }
        self.assertEqual(error_of(schema, {"a": "long"}), "")
        self.assertEqual(error_of({"$schema": DRAFT7, "prefixItems": [False]}, [1]), "")
        self.assertEqual(error_of({"$schema": DRAFT7, "unevaluatedItems": False}, [1]), "")
        same = dict(schema, **{"$schema": "https://json-schema.org/draft/2020-12/schema"})
        self.assertTrue(error_of(same, {"a": "long"}))

    def test_no_schema_is_2020_12_accepting_draft7_spellings(self) -> None:
        schema = {"items": [{"type": "string"}], "additionalItems": False}
        self.assertEqual(error_of(schema, ["a"]), "")
        self.assertEqual(
            error_of(schema, ["a", 1]), "invalid arguments: expected at most 1 item, got 2"
        )
        deps = {"dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
        self.assertTrue(error_of(deps, {"a": 1}))
        self.assertTrue(error_of(deps, {"c": 1}))
        self.assertEqual(error_of(deps, {"a": 1, "b": 2, "c": 3, "d": 4}), "")

    def test_ids_anchors_and_escaped_pointers(self) -> None:
        schema = {
            "$id": "https://example.com/root.json",
            "$defs": {
                "a~b/c%d": {"type": "integer"},
                "named": {"$anchor": "thing", "type": "string"},
                "other": {"$id": "other.json", "$defs": {"x": {"type": "null"}}},
            },
            "properties": {
                "p": {"$ref": "#/$defs/a~0b~1c%25d"},
                "q": {"$ref": "#thing"},
                "r": {"$ref": "other.json#/$defs/x"},
            },
        }
        self.assertEqual(error_of(schema, {"p": 1, "q": "s", "r": None}), "")
        self.assertTrue(error_of(schema, {"p": "1"}))
        self.assertTrue(error_of(schema, {"q": 1}))
        self.assertTrue(error_of(schema, {"r": 1}))

    def test_deeply_nested_schemas_compile(self) -> None:
        schema: Any = {"type": "integer"}
        for _ in range(60):
            schema = {"type": "array", "items": {"type": "object", "properties": {"a": schema}}}
        value: Any = 1
        for _ in range(60):
            value = [{"a": value}]
        check = at.validator(schema)
        check.validate(value)
        with self.assertRaises(at.ValidationError) as caught:
            check.validate(json.loads(json.dumps(value).replace("1", '"1"')))
        self.assertTrue(caught.exception.path.startswith("[0].a[0].a[0].a"))
        self.assertTrue(caught.exception.path.endswith("[0].a"))


if __name__ == "__main__":
    unittest.main()
