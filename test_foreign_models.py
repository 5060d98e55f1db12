"""pydantic models and msgspec Structs as parameter and return types, described by
their own libraries, which the core never imports: their schemas, their validation, their
JSON.  Tested against the real packages (a skip for a newcomer, a failure under CI=true)."""

import importlib.util
import json
import unittest
from typing import Any

import agenttool as at
from test_agenttool import needs

HAS_PYDANTIC = importlib.util.find_spec("pydantic") is not None
HAS_MSGSPEC = importlib.util.find_spec("msgspec") is not None
HAS_ATTRS = importlib.util.find_spec("attrs") is not None

# Recursive classes refer to themselves by a name the module holds.
if HAS_PYDANTIC:
    import pydantic

    class Tree(pydantic.BaseModel):
        v: int
        kids: list["Tree"] = []


if HAS_MSGSPEC:
    import msgspec

    class Node(msgspec.Struct):
        v: int
        kids: list["Node"] = []


@needs(HAS_PYDANTIC, "pydantic (pip install -r .ci/requirements.txt)")
class TestPydanticModels(unittest.TestCase):
    def setUp(self) -> None:
        import pydantic

        class Address(pydantic.BaseModel):
            city: str
            zip: str = pydantic.Field(pattern=r"^\d{4}$")

        class Person(pydantic.BaseModel):
            name: str
            age: int = pydantic.Field(ge=0)
            home: Address

            @pydantic.field_validator("name")
            @classmethod
            def not_bob(cls, v: str) -> str:
                if v == "bob":
                    raise ValueError("bob is not allowed")
                return v

        def greet(p: Person, loud: bool = False) -> Person:
            """Greet a person."""
            return p

        self.Person, self.Address = Person, Address
        self.greet = at.tool(greet)
        self.ok = {"name": "al", "age": 3, "home": {"city": "Porto", "zip": "4000"}}

    def test_the_schema_is_the_model_s_own_with_its_defs_at_the_root(self) -> None:
        params = self.greet.parameters
        assert params is not None
        self.assertEqual(
            params["properties"]["p"]["properties"]["home"], {"$ref": "#/$defs/Address"}
        )
        self.assertEqual(params["$defs"]["Address"], self.Address.model_json_schema())
        at.validator(params)  # the whole schema compiles, refs resolved
        import jsonschema

        jsonschema.Draft202012Validator.check_schema(params)
        jsonschema.validate({"p": self.ok}, params)

    def test_arguments_decode_through_the_model_and_results_are_its_json(self) -> None:
        result = self.greet.execute(at.Call("1", {"p": self.ok}))
        self.assertEqual(json.loads(str(result.output)), self.ok)
        self.assertEqual(result.structured, self.ok)
        self.assertIsNotNone(at.output_schema_of(self.greet))

    def test_errors_name_the_path_the_model_must_fix(self) -> None:
        bad: list[tuple[dict[str, Any], str]] = [
            ({**self.ok, "age": -1}, "p.age: expected a number >= 0"),
            ({**self.ok, "home": {"city": "x", "zip": "12"}}, "p.home.zip: expected a string"),
            ({**self.ok, "name": "bob"}, "p.name: Value error, bob is not allowed"),  # its own
        ]
        for p, message in bad:
            with self.assertRaises(at.ValidationError) as cm:
                self.greet.execute(at.Call("1", {"p": p}))
            self.assertIn(f"invalid arguments: {message}", str(cm.exception))

    def test_strict_closes_the_object_or_refuses_saying_why(self) -> None:
        import pydantic

        class Closed(pydantic.BaseModel):
            a: int

        class Open(pydantic.BaseModel):
            a: int
            b: int = 3

        self.assertIs(at.schema_of(Closed, strict=True)["additionalProperties"], False)
        with self.assertRaisesRegex(TypeError, "pydantic model Open .* field 'b' has a default"):
            at.schema_of(Open, strict=True)

    def test_a_recursive_model(self) -> None:
        def total(tree: "Tree") -> int:
            """Sum a tree."""
            return tree.v + sum(total(k) for k in tree.kids)

        t = at.tool(total)
        tree = {"v": 5, "kids": [{"v": 1, "kids": [{"v": 2}]}]}
        self.assertEqual(t.execute(at.Call("1", {"tree": tree})).output, "8")


@needs(HAS_MSGSPEC, "msgspec (pip install -r .ci/requirements.txt)")
class TestMsgspecStructs(unittest.TestCase):
    def test_a_struct_in_and_out(self) -> None:
        import msgspec

        class Point(msgspec.Struct):
            x: int
            y: int = 0

        def move(p: Point) -> Point:
            """Move a point."""
            return Point(p.x + 1, p.y)

        t = at.tool(move)
        params = t.parameters
        assert params is not None
        self.assertEqual(params["properties"]["p"]["required"], ["x"])
        self.assertNotIn("$defs", params)  # msgspec's top-level ref is unwrapped
        self.assertEqual(t.execute(at.Call("1", {"p": {"x": 1}})).output, '{"x":2,"y":0}')
        with self.assertRaisesRegex(at.ValidationError, 'p.x: expected integer, got "a"'):
            t.execute(at.Call("1", {"p": {"x": "a"}}))

    def test_a_recursive_struct(self) -> None:
        schema = at.schema_of(Node)
        self.assertEqual(schema["$ref"], "#/$defs/Node")
        self.assertEqual(at.decode(Node, {"v": 1, "kids": [{"v": 2}]}).kids[0].v, 2)


@needs(HAS_ATTRS, "attrs (pip install -r .ci/requirements.txt)")
class TestAttrsClasses(unittest.TestCase):
    def test_an_attrs_class_is_an_object_of_its_fields(self) -> None:
        import attrs

        @attrs.define
        class Pt:
            """A point.

            Args:
                x: across
            """

            x: int
            y: int = 0
            tags: list = attrs.field(factory=list)
            _secret: str = "s"
            computed: int = attrs.field(init=False, default=7)

        def move(p: Pt) -> Pt:
            """Move a point."""
            return p

        t = at.tool(move)
        params = t.parameters
        assert params is not None
        p = params["properties"]["p"]
        self.assertEqual(p["required"], ["x"])
        self.assertEqual(list(p["properties"]), ["x", "y", "tags", "secret"])  # __init__'s names
        self.assertEqual(p["properties"]["x"]["description"], "across")
        out = t.execute(at.Call("1", {"p": {"x": 1, "secret": "q"}})).output
        self.assertEqual(
            json.loads(str(out)), {"x": 1, "y": 0, "tags": [], "secret": "q", "computed": 7}
        )
        self.assertEqual(at.decode(Pt, json.loads(str(out))), Pt(1, 0, [], "q"))  # read back
        with self.assertRaisesRegex(at.ValidationError, 'p.x: expected integer, got "no"'):
            t.execute(at.Call("1", {"p": {"x": "no"}}))


if __name__ == "__main__":
    unittest.main()
