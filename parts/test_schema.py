"""Tests of schema generation and decoding (parts/schema.py), through the public names."""

# Annotations here are evaluated at run time by get_type_hints, on 3.9 too: keep Optional/Union.
# ruff: noqa: UP007, UP045

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import functools
import json
import os
import pathlib
import sys
import unittest
import uuid
from typing import (
    Annotated,
    Any,
    Callable,
    Literal,
    NamedTuple,
    Optional,
    TypedDict,
    Union,
)

import parts.schema as at

CORPUS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "..",
    "shared",
    "conformance",
    "agenttool-schema",
)


make_typeddict: Any = TypedDict  # the functional form, with names computed at run time


def dumps(schema: Any) -> str:
    return json.dumps(schema, indent=2) + "\n"


class Opaque:
    pass


@dataclasses.dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


# ----- the corpus, in Python -------------------------------------------------------------------


@dataclasses.dataclass
class Item:
    name: str
    Tags: list[str]


def read_file(path: Annotated[str, "Absolute path to read"], max_bytes: int = 0) -> str:
    """Read a file.

    Args:
        max_bytes (int): Stop after this
            many bytes
    """
    return ""


class _ReadFileBase(TypedDict):
    path: Annotated[str, "Absolute path to read"]


class ReadFileStrict(_ReadFileBase, total=False):
    """Optional keys by inheritance: keeps declaration order on every Python."""

    max_bytes: Annotated[int, "Stop after this many bytes"]


def everything(
    *,
    str: str,
    int: Annotated[int, "an integer"],
    uint: int,
    float: float,
    bool: bool,
    level: Literal["low", "medium", "high"],
    count: Optional[Literal[1, 2, 3]] = None,
    when: datetime.datetime,
    raw: Any = None,
    any: Any = None,
    bytes: bytes = b"",
    list: list[Item],
    matrix: Optional[list[list[float]]] = None,
    nested: Item,
    pointer: Optional[Item] = None,
    labels: Optional[dict[str, str]] = None,
    duration: int = 0,
) -> None:
    """Every kind the seed's corpus covers."""


@dataclasses.dataclass
class Embedded:
    name: str
    Tags: list[str]
    extra: str = ""


def strict_args(
    query: Annotated[str, "Search terms"],
    limit: Annotated[Optional[int], "Maximum results"] = None,
    *,
    inner: Inner,
) -> None:
    pass


@dataclasses.dataclass
class Inner:
    deep: bool


def no_args() -> None:
    pass


def text_marshaler(key: pathlib.PurePosixPath) -> None:
    pass


@dataclasses.dataclass
class ReadFileArgs:
    path: str = dataclasses.field(metadata={"description": "Absolute path to read"})
    max_bytes: Annotated[int, at.Meta(description="Stop after this many bytes")] = 0


class Shadowed(TypedDict):
    Memo: str
    id: Annotated[str, "outer wins"]


def json_marshaler(value: Any, word: Literal[1, 2]) -> None:
    pass


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


def strict_nullable(
    level: Optional[Level] = None,
    raw: Any = None,
    when: Optional[datetime.datetime] = None,
    *,
    items: list[Item],
) -> None:
    pass


class ByteArray(NamedTuple):
    slice: bytes
    fixed: list[int]


CORPUS_TARGETS: dict[str, Any] = {
    "read_file": read_file,
    "read_file_strict": ReadFileStrict,
    "everything": everything,
    "embedded": Embedded,
    "strict": strict_args,
    "no_args": no_args,
    "no_args_strict": no_args,
    "text_marshaler": text_marshaler,
    "pointer_to_struct": ReadFileArgs,
    "shadowed": Shadowed,
    "json_marshaler": json_marshaler,
    "strict_nullable": strict_nullable,
    "byte_array": ByteArray,
}


class TestCorpus(unittest.TestCase):
    """The seed's golden schemas, byte for byte."""

    def setUp(self) -> None:
        path = os.path.join(CORPUS, "manifest.json")
        if not os.path.exists(path):
            self.skipTest(f"corpus absent: {path}")
        with open(path) as f:
            self.fixtures = json.load(f)["fixtures"]

    def test_every_fixture_is_byte_identical(self) -> None:
        self.assertEqual(len(self.fixtures), 14)
        for fx in self.fixtures:
            with self.subTest(fixture=fx["name"]):
                if "supplied" in fx:
                    # A supplied schema is the tool layer's parameters= option, served verbatim;
                    # the lead tests it there. Here: the golden is the supplied schema.
                    with open(os.path.join(CORPUS, fx["name"] + ".json")) as f:
                        self.assertEqual(json.load(f), fx["supplied"])
                    continue
                target = CORPUS_TARGETS[fx["name"]]
                with open(os.path.join(CORPUS, fx["name"] + ".json")) as f:
                    golden = f.read()
                self.assertEqual(dumps(at.schema_of(target, strict=fx["strict"])), golden)

    @unittest.skipIf(sys.version_info < (3, 11), "typing.NotRequired needs Python 3.11")
    def test_read_file_strict_with_not_required(self) -> None:
        from typing import NotRequired  # type: ignore[attr-defined,unused-ignore]

        td = make_typeddict(
            "ReadFile",
            {
                "path": Annotated[str, "Absolute path to read"],
                "max_bytes": NotRequired[Annotated[int, "Stop after this many bytes"]],
            },
        )
        with open(os.path.join(CORPUS, "read_file_strict.json")) as f:
            self.assertEqual(dumps(at.schema_of(td, strict=True)), f.read())
        with open(os.path.join(CORPUS, "read_file.json")) as f:
            self.assertEqual(dumps(at.schema_of(td)), f.read())

    def test_map_under_strict_is_refused_naming_the_field(self) -> None:
        def f(labels: dict[str, str]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "labels": .*strict'):
            at.schema_of(f, strict=True)

    def test_unknown_type_is_refused_naming_the_parameter(self) -> None:
        def f(x: Opaque) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "x": cannot express type .*Opaque'):
            at.schema_of(f)

    def test_array_without_items_is_refused_under_strict(self) -> None:
        def f(xs: list) -> None:  # type: ignore[type-arg]
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "xs": .*bare list.*list\[\.\.\.\]'):
            at.schema_of(f, strict=True)
        self.assertEqual(at.schema_of(f)["properties"]["xs"], {"type": "array", "items": {}})


# ----- types -----------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Mixed(enum.Enum):
    A = "a"
    ONE = 1


class Point(NamedTuple):
    x: int
    y: int = 0


@dataclasses.dataclass
class Node:
    """A tree node."""

    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Tree:
    root: Optional[Node] = None


@dataclasses.dataclass
class When:
    when: datetime.datetime


@dataclasses.dataclass
class Holder:
    inner: BadInner


@dataclasses.dataclass
class BadInner:
    when: dict[int, str]


class TestTypes(unittest.TestCase):
    """Each supported type's schema."""

    def prop(self, tp: Any, strict: bool = False) -> Any:
        return at.schema_of(tp, strict=strict)

    def test_scalars(self) -> None:
        self.assertEqual(self.prop(bool), {"type": "boolean"})
        self.assertEqual(self.prop(int), {"type": "integer"})
        self.assertEqual(self.prop(float), {"type": "number"})
        self.assertEqual(self.prop(str), {"type": "string"})
        self.assertEqual(self.prop(bytes), {"type": "string"})
        self.assertEqual(self.prop(type(None)), {"type": "null"})
        self.assertEqual(self.prop(Any), {})

    def test_formats_and_string_shaped_types(self) -> None:
        self.assertEqual(self.prop(datetime.datetime), {"type": "string", "format": "date-time"})
        self.assertEqual(self.prop(datetime.date), {"type": "string", "format": "date"})
        self.assertEqual(self.prop(datetime.time), {"type": "string", "format": "time"})
        self.assertEqual(self.prop(uuid.UUID), {"type": "string", "format": "uuid"})
        self.assertEqual(self.prop(pathlib.Path), {"type": "string"})
        dec = self.prop(decimal.Decimal)
        self.assertEqual(dec["type"], "string")
        self.assertRegex("-12.50", dec["pattern"])
        self.assertNotRegex("1e5x", dec["pattern"])

    def test_containers(self) -> None:
        self.assertEqual(self.prop(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(
            self.prop(tuple[int, ...]), {"type": "array", "items": {"type": "integer"}}
        )
        self.assertEqual(
            self.prop(set[str]), {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        )
        self.assertEqual(
            self.prop(frozenset[int]),
            {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        )
        self.assertEqual(
            self.prop(tuple[int, str]),
            {
                "type": "array",
                "items": False,
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        )
        self.assertEqual(
            self.prop(dict[str, float]),
            {"type": "object", "additionalProperties": {"type": "number"}},
        )

    def test_unions_literals_enums(self) -> None:
        self.assertEqual(self.prop(Optional[int]), {"type": ["integer", "null"]})
        self.assertEqual(self.prop(Union[int, str]), {"type": ["integer", "string"]})
        self.assertEqual(
            self.prop(Union[Point, int]),
            {"anyOf": [self.prop(Point), {"type": "integer"}]},
        )
        self.assertEqual(
            self.prop(Optional[Point]), {"anyOf": [self.prop(Point), {"type": "null"}]}
        )
        self.assertEqual(self.prop(Literal["a", "b"]), {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(
            self.prop(Literal[1, "a", None]),
            {"type": ["integer", "string", "null"], "enum": [1, "a", None]},
        )
        self.assertEqual(self.prop(Color), {"type": "integer", "enum": [1, 2]})
        self.assertEqual(self.prop(Mixed), {"type": ["string", "integer"], "enum": ["a", 1]})
        self.assertEqual(
            self.prop(Optional[Level]),
            {"type": ["string", "null"], "enum": ["low", "high", None]},
        )

    def test_null_is_written_last_in_unions(self) -> None:
        self.assertEqual(self.prop(Union[None, int, str]), {"type": ["integer", "string", "null"]})
        self.assertEqual(
            self.prop(Union[None, Point, int]),
            {"anyOf": [self.prop(Point), {"type": "integer"}, {"type": "null"}]},
        )
        self.assertIsNone(at.decode(Union[None, int, str], None))

    def test_datetime_subclasses_keep_their_class(self) -> None:
        class Stamp(datetime.datetime):
            pass

        self.assertEqual(self.prop(Stamp), {"type": "string", "format": "date-time"})
        self.assertIs(type(at.decode(Stamp, "2024-01-02T03:04:05")), Stamp)

    @unittest.skipIf(sys.version_info < (3, 10), "X | Y needs Python 3.10")
    def test_pipe_union(self) -> None:
        self.assertEqual(self.prop(eval("int | None")), {"type": ["integer", "null"]})

    def test_newtype_subclasses_and_abstract_containers(self) -> None:
        import collections.abc as abc
        import typing

        user_id = typing.NewType("user_id", int)
        self.assertEqual(self.prop(user_id), {"type": "integer"})

        class Name(str):
            pass

        self.assertEqual(self.prop(Name), {"type": "string"})
        self.assertIs(type(at.decode(Name, "x")), Name)
        self.assertEqual(at.decode(bytearray, "aGk="), bytearray(b"hi"))
        self.assertEqual(at.decode(abc.Sequence[int], [1, 2]), [1, 2])
        self.assertEqual(self.prop(abc.Mapping[str, int]), self.prop(dict[str, int]))

    def test_values_that_are_not_json_are_refused(self) -> None:
        import typing

        class Odd(enum.Enum):
            A = (1, 2)

        with self.assertRaisesRegex(TypeError, r"member A has value \(1, 2\)"):
            self.prop(Odd)
        with self.assertRaisesRegex(TypeError, r"Literal value b'x'"):
            self.prop(Literal[b"x"])
        with self.assertRaisesRegex(TypeError, r"type variable"):
            self.prop(list[typing.TypeVar("T")])  # type: ignore[misc]

    def test_namedtuple_is_an_object_of_named_fields(self) -> None:
        self.assertEqual(
            self.prop(Point),
            {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x"],
            },
        )

    def test_typeddict_totality(self) -> None:
        class Opt(TypedDict, total=False):
            a: int
            b: str

        s = self.prop(Opt)
        self.assertEqual(s["required"], [])
        self.assertEqual(self.prop(Opt, strict=True)["required"], ["a", "b"])
        self.assertEqual(self.prop(Opt, strict=True)["properties"]["a"], {"type": "integer"})

    @unittest.skipIf(sys.version_info < (3, 11), "Required/NotRequired are in typing from 3.11")
    def test_typeddict_required_and_not_required(self) -> None:
        from typing import NotRequired, Required  # type: ignore[attr-defined,unused-ignore]

        td = make_typeddict("TD", {"a": Required[int], "b": NotRequired[str]}, total=True)
        self.assertEqual(self.prop(td)["required"], ["a"])
        td2 = make_typeddict("TD2", {"a": Required[int], "b": str}, total=False)
        self.assertEqual(self.prop(td2)["required"], ["a"])

    def test_typing_extensions_markers_are_recognised_by_name(self) -> None:
        try:
            import typing_extensions as te
        except ImportError:
            self.skipTest("typing_extensions is not installed")
        make: Any = te.TypedDict
        td = make("TD", {"a": int, "b": te.NotRequired[str]})
        self.assertEqual(self.prop(td)["required"], ["a"])

    def test_recursive_type_goes_through_defs(self) -> None:
        s = self.prop(Tree)
        self.assertEqual(s["properties"]["root"], {"$ref": "#/$defs/Node"})
        node = s["$defs"]["Node"]
        self.assertEqual(node["description"], "A tree node.")
        self.assertEqual(node["properties"]["children"]["items"], {"$ref": "#/$defs/Node"})
        self.assertEqual(list(s), ["type", "properties", "required", "$defs"])

    def test_recursive_root_is_inlined_and_refers_to_itself(self) -> None:
        s = self.prop(Node)
        self.assertNotIn("$defs", s)
        self.assertNotIn("description", s)  # the root's description is the tool's
        self.assertEqual(s["properties"]["children"]["items"], {"$ref": "#"})

    def test_recursive_under_strict_is_nullable_by_anyof(self) -> None:
        s = self.prop(Tree, strict=True)
        self.assertEqual(
            s["properties"]["root"],
            {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
        )
        self.assertIs(s["$defs"]["Node"]["additionalProperties"], False)

    def test_non_recursive_nested_types_are_inlined(self) -> None:
        def f(a: Item, b: Item) -> None:
            pass

        s = at.schema_of(f)
        self.assertNotIn("$defs", s)
        self.assertEqual(s["properties"]["a"], s["properties"]["b"])

    def test_a_none_default_makes_the_type_optional(self) -> None:
        def f(x: int = None) -> None:  # type: ignore[assignment]
            pass

        self.assertEqual(
            at.schema_of(f, strict=True)["properties"]["x"], {"type": ["integer", "null"]}
        )
        self.assertEqual(at.decode(f, {"x": None}, strict=True), {"x": None})

    def test_optional_without_default_is_required_and_nullable(self) -> None:
        def f(x: Optional[int], y: Optional[int] = None) -> None:
            pass

        s = at.schema_of(f)
        self.assertEqual(s["properties"]["x"], {"type": ["integer", "null"]})
        self.assertEqual(s["properties"]["y"], {"type": "integer"})
        self.assertEqual(s["required"], ["x"])

    def test_unexpressible_types_name_their_path(self) -> None:
        def f(opts: Holder) -> None:
            pass

        with self.assertRaisesRegex(
            TypeError,
            r'^parameter "opts": field "inner.when": cannot express type dict\[int, str\]',
        ):
            at.schema_of(f)

        def g(cb: Callable[[int], str]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "cb": cannot express type'):
            at.schema_of(g)

        def h(xs: list[dict[str, Any]]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "xs": field "\[\]": .*strict'):
            at.schema_of(h, strict=True)

    def test_bad_signatures_are_refused(self) -> None:
        def star(*xs: int) -> None:
            pass

        def untyped(x) -> None:  # type: ignore[no-untyped-def]
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "\*xs"'):
            at.schema_of(star)
        with self.assertRaisesRegex(TypeError, r'parameter "x": no type annotation'):
            at.schema_of(untyped)

    def test_pipe_in_a_string_annotation_on_39_names_the_parameter(self) -> None:
        def f(x):  # type: ignore[no-untyped-def]
            pass

        f.__annotations__ = {"x": "int | None"}
        if sys.version_info < (3, 10):
            with self.assertRaisesRegex(TypeError, r'^parameter "x": .*Python 3.10.*Optional'):
                at.schema_of(f)
        else:
            self.assertEqual(at.schema_of(f)["properties"]["x"], {"type": ["integer", "null"]})

    def test_a_bad_return_annotation_does_not_matter(self) -> None:
        def f(a: int) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
            pass

        self.assertEqual(at.schema_of(f)["required"], ["a"])

        def g(a: int, b: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "b": cannot evaluate'):
            at.schema_of(g)

    def test_wrapped_functions_and_callable_objects(self) -> None:
        def inner(a: int, b: Optional[str] = None) -> None:
            pass

        @functools.wraps(inner)
        def outer(*args: Any, **kwargs: Any) -> None:
            pass

        self.assertEqual(at.schema_of(outer), at.schema_of(inner))

        class Callable_:
            def __call__(self, x: list[int]) -> None:
                pass

        self.assertEqual(list(at.schema_of(Callable_())["properties"]), ["x"])

    def test_unresolvable_annotation_names_the_field(self) -> None:
        @dataclasses.dataclass
        class D:
            a: int
            b: NoSuchType  # type: ignore[name-defined]  # noqa: F821

        with self.assertRaisesRegex(TypeError, r'field "b": cannot evaluate'):
            at.schema_of(D)


class TestDescriptions(unittest.TestCase):
    def test_google_numpy_sphinx_and_annotated_precedence(self) -> None:
        def google(a: int, b: Annotated[str, "from Annotated"], c: int = 1) -> None:
            """Summary line
            continues here.

            More prose.

            Args:
                a (int): The a.
                b: Loses to Annotated.
                c: The c,
                    on two lines.

            Returns:
                Nothing.
            """

        def numpy(a: int, c: int) -> None:
            """Do it.

            Parameters
            ----------
            a : int
                The a.
            c
                The c.

            Returns
            -------
            None
            """

        def sphinx(a: int, c: int) -> None:
            """Do it.

            :param a: The a.
            :param int c: The c,
                continued.
            :returns: nothing
            """

        g = at.schema_of(google)["properties"]
        self.assertEqual(g["a"]["description"], "The a.")
        self.assertEqual(g["b"]["description"], "from Annotated")
        self.assertEqual(g["c"]["description"], "The c, on two lines.")
        n = at.schema_of(numpy)["properties"]
        self.assertEqual((n["a"]["description"], n["c"]["description"]), ("The a.", "The c."))
        s = at.schema_of(sphinx)["properties"]
        self.assertEqual(
            (s["a"]["description"], s["c"]["description"]), ("The a.", "The c, continued.")
        )
        self.assertEqual(at._doc_summary(google), "Summary line continues here.")

    def test_docstring_opening_with_args_has_no_summary_but_keeps_params(self) -> None:
        def f(a: int) -> None:
            """Args:
            a: The a.
            """

        self.assertEqual(at._doc_summary(f), "")
        self.assertEqual(at.schema_of(f)["properties"]["a"]["description"], "The a.")

    def test_unparseable_docstrings_are_never_an_error(self) -> None:
        for doc in ("Args:", "Parameters\n----------\n", ":param", "Args:\n  :::\n  (", "\x00"):

            def f(a: int) -> None:
                pass

            f.__doc__ = doc
            with self.subTest(doc=doc):
                self.assertEqual(at.schema_of(f)["properties"]["a"]["type"], "integer")
                at._doc_summary(f)

    def test_meta_constraints_and_member_order(self) -> None:
        meta = at.Meta(
            description="n",
            minimum=0,
            maximum=10,
            exclusive_minimum=-1,
            exclusive_maximum=11,
            multiple_of=2,
            examples=[2, 4],
        )
        s = at.schema_of(Annotated[int, meta])
        self.assertEqual(
            list(s),
            [
                "type",
                "description",
                "minimum",
                "exclusiveMinimum",
                "maximum",
                "exclusiveMaximum",
                "multipleOf",
                "examples",
            ],
        )
        t = at.schema_of(
            Annotated[str, at.Meta(min_length=1, max_length=5, pattern="^a", format="email")]
        )
        self.assertEqual(
            t,
            {"type": "string", "format": "email", "minLength": 1, "maxLength": 5, "pattern": "^a"},
        )
        items = at.schema_of(Annotated[list[int], at.Meta(min_items=1, max_items=3)])
        self.assertEqual(list(items), ["type", "items", "minItems", "maxItems"])

    def test_a_bad_pattern_is_refused_at_registration(self) -> None:
        def f(a: Annotated[str, at.Meta(pattern="(")]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "a": Meta\(pattern'):
            at.schema_of(f)

    def test_a_field_description_beats_its_class_summary(self) -> None:
        def f(tree: Node, other: Annotated[Node, "annotated"]) -> None:
            """Walk.

            Args:
                tree: The tree to walk.
                other: Loses to Annotated.
            """

        s = at.schema_of(f)
        self.assertEqual(
            s["properties"]["tree"], {"description": "The tree to walk.", "$ref": "#/$defs/Node"}
        )
        self.assertEqual(s["properties"]["other"]["description"], "annotated")
        self.assertEqual(s["$defs"]["Node"]["description"], "A tree node.")

    def test_class_docstring_attributes_describe_fields(self) -> None:
        @dataclasses.dataclass
        class Opts:
            """Options.

            Attributes:
                depth: How deep.
            """

            depth: int

        self.assertEqual(at.schema_of(Opts)["properties"]["depth"]["description"], "How deep.")


class TestStrict(unittest.TestCase):
    def test_every_object_closed_and_fully_required(self) -> None:
        def f(a: list[Item], p: Point, d: Embedded) -> None:
            pass

        s = at.schema_of(f, strict=True)
        self.assertIs(s["additionalProperties"], False)
        self.assertIs(s["properties"]["a"]["items"]["additionalProperties"], False)
        self.assertEqual(s["properties"]["p"]["required"], ["x", "y"])
        self.assertEqual(
            s["properties"]["d"]["properties"]["extra"],
            {"type": ["string", "null"], "description": 'Default: "".'},
        )

    def test_defaults_become_nullable_and_enum_gets_null_last(self) -> None:
        def f(n: int = 3, level: Level = Level.LOW, a: Any = 1) -> None:
            pass

        p = at.schema_of(f, strict=True)["properties"]
        self.assertEqual(p["n"], {"type": ["integer", "null"], "description": "Default: 3."})
        self.assertEqual(
            p["level"],
            {
                "type": ["string", "null"],
                "description": 'Default: "low".',
                "enum": ["low", "high", None],
            },
        )
        self.assertEqual(p["a"], {})

    def test_unsupported_keywords_move_into_the_description_and_are_still_enforced(self) -> None:
        def f(
            name: Annotated[str, at.Meta(description="Name", min_length=2, max_length=4)],
            tags: set[str],
        ) -> None:
            pass

        p = at.schema_of(f, strict=True)["properties"]
        self.assertEqual(
            p["name"],
            {"type": "string", "description": "Name. At least 2 characters. At most 4 characters."},
        )
        self.assertEqual(
            p["tags"],
            {"type": "array", "description": "Items must be unique.", "items": {"type": "string"}},
        )
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: name: expected at least 2"
        ):
            at.decode(f, {"name": "a", "tags": []}, strict=True)
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: tags: expected unique"
        ):
            at.decode(f, {"name": "ab", "tags": ["x", "x"]}, strict=True)

    def test_examples_and_other_formats_move_into_the_description(self) -> None:
        s = at.schema_of(Annotated[str, at.Meta(format="uri", examples=["a"])], strict=True)
        self.assertEqual(s, {"type": "string", "description": 'Format: uri. Examples: "a".'})
        kept = at.schema_of(Annotated[str, at.Meta(format="email", pattern="@")], strict=True)
        self.assertEqual(kept, {"type": "string", "format": "email", "pattern": "@"})

    def test_fixed_tuples_are_refused_under_strict(self) -> None:
        def f(pair: tuple[int, int]) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'^parameter "pair": .*prefixItems'):
            at.schema_of(f, strict=True)

    def test_limits(self) -> None:
        many = make_typeddict("Many", {f"k{i}": int for i in range(5001)})
        with self.assertRaisesRegex(TypeError, r"5,001 properties"):
            at.schema_of(many, strict=True)
        self.assertEqual(len(at.schema_of(many)["properties"]), 5001)
        with self.assertRaisesRegex(TypeError, r"1,001 enum values"):
            at.schema_of(Literal[tuple(range(1001))], strict=True)
        with self.assertRaisesRegex(TypeError, r"characters"):
            at.schema_of(Literal["x" * 120_001], strict=True)
        deep: Any = int
        for i in range(11):
            deep = make_typeddict(f"D{i}", {"d": deep})
        with self.assertRaisesRegex(TypeError, r"11 levels"):
            at.schema_of(deep, strict=True)
        at.schema_of(deep)  # fine outside strict


# ----- decoding --------------------------------------------------------------------------------


@dataclasses.dataclass
class Everything:
    b: bool
    i: int
    f: float
    s: str
    raw: bytes
    none: None
    anything: Any
    ints: list[int]
    pair: tuple[int, str]
    many: tuple[int, ...]
    uniq: set[int]
    frozen: frozenset[str]
    labels: dict[str, int]
    color: Color
    lit: Literal["a", "b"]
    when: datetime.datetime
    day: datetime.date
    clock: datetime.time
    ident: uuid.UUID
    money: decimal.Decimal
    path: pathlib.Path
    point: Point
    node: Node
    shadow: Shadowed
    maybe: Optional[int] = None
    tags: list[str] = dataclasses.field(default_factory=lambda: ["t"])


class TestDecode(unittest.TestCase):
    def test_round_trip_of_every_type(self) -> None:
        value = {
            "b": True,
            "i": 2.0,
            "f": 3,
            "s": "x",
            "raw": "aGk=",
            "none": None,
            "anything": {"k": [1]},
            "ints": [1, 2],
            "pair": [1, "a"],
            "many": [1, 2, 3],
            "uniq": [1, 2],
            "frozen": ["a"],
            "labels": {"a": 1},
            "color": 2,
            "lit": "b",
            "when": "2024-01-02T03:04:05.1Z",
            "day": "2024-01-02",
            "clock": "03:04:05Z",
            "ident": "12345678-1234-5678-1234-567812345678",
            "money": "12.50",
            "path": "/tmp/x",
            "point": {"x": 1},
            "node": {"value": 1, "children": [{"value": 2}]},
            "shadow": {"Memo": "m", "id": "i"},
        }
        e = at.decode(Everything, value)
        self.assertIsInstance(e, Everything)
        utc = datetime.timezone.utc
        expected = Everything(
            b=True,
            i=2,
            f=3.0,
            s="x",
            raw=b"hi",
            none=None,
            anything={"k": [1]},
            ints=[1, 2],
            pair=(1, "a"),
            many=(1, 2, 3),
            uniq={1, 2},
            frozen=frozenset({"a"}),
            labels={"a": 1},
            color=Color.GREEN,
            lit="b",
            when=datetime.datetime(2024, 1, 2, 3, 4, 5, 100000, tzinfo=utc),
            day=datetime.date(2024, 1, 2),
            clock=datetime.time(3, 4, 5, tzinfo=utc),
            ident=uuid.UUID("12345678-1234-5678-1234-567812345678"),
            money=decimal.Decimal("12.50"),
            path=pathlib.Path("/tmp/x"),
            point=Point(1, 0),
            node=Node(1, [Node(2, [])]),
            shadow={"Memo": "m", "id": "i"},
            maybe=None,
            tags=["t"],
        )
        self.assertEqual(e, expected)
        self.assertIs(type(e.i), int)
        self.assertIs(type(e.f), float)
        self.assertIsInstance(e.pair, tuple)
        self.assertIsInstance(e.frozen, frozenset)

    def test_z_suffix_and_offsets_on_every_version(self) -> None:
        utc = datetime.timezone.utc
        for text in ("2024-01-02T03:04:05Z", "2024-01-02t03:04:05z", "2024-01-02T03:04:05+0000"):
            with self.subTest(text=text):
                self.assertEqual(
                    at.decode(datetime.datetime, text),
                    datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc),
                )
        with self.assertRaisesRegex(at.ValidationError, r"ISO 8601 date-time"):
            at.decode(datetime.datetime, "yesterday")

    def test_bad_base64_is_refused_at_its_path(self) -> None:
        def f(blobs: list[bytes]) -> None:
            pass

        self.assertEqual(at.decode(f, {"blobs": ["aGk", "_-8="]}), {"blobs": [b"hi", b"\xff\xef"]})
        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"blobs": ["aGk=", "not base64!"]})
        self.assertEqual(
            str(cm.exception),
            'invalid arguments: blobs[1]: expected base64 data, got "not base64!"',
        )

    def test_functions_decode_to_kwargs_and_defaults_are_left_to_python(self) -> None:
        def f(a: int, when: datetime.date, b: str = "x") -> None:
            pass

        self.assertEqual(
            at.decode(f, {"a": 1, "when": "2024-01-02"}),
            {"a": 1, "when": datetime.date(2024, 1, 2)},
        )

    def test_strict_null_means_default_and_none_where_the_type_admits_it(self) -> None:
        def f(n: int = 3, m: Optional[int] = 5, *, e: Embedded) -> None:
            pass

        kwargs = at.decode(
            f, {"n": None, "m": None, "e": {"name": "a", "Tags": [], "extra": None}}, strict=True
        )
        self.assertEqual(kwargs, {"m": None, "e": Embedded("a", [], "")})
        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: n: expected integer, got null"
        ):
            at.decode(f, {"n": None, "e": {"name": "a", "Tags": []}})

    def test_default_factory_fills_absent_fields(self) -> None:
        self.assertEqual(at.decode(Node, {"value": 1}), Node(1, []))
        self.assertEqual(at.decode(Node, {"value": 1, "children": None}, strict=True), Node(1, []))

    def test_unexpected_property_is_refused_with_its_path(self) -> None:
        def f(e: Embedded, items: list[Point]) -> None:
            pass

        cases = [
            (
                {"e": {"name": "a", "Tags": []}, "items": [], "colour": 1},
                'unexpected property "colour"',
            ),
            (
                {"e": {"name": "a", "Tags": [], "zz": 1, "bogus": 2}, "items": []},
                'e: unexpected property "bogus"',
            ),
            (
                {"e": {"name": "a", "Tags": []}, "items": [{"x": 1}, {"x": 1, "z": 0}]},
                'items[1]: unexpected property "z"',
            ),
        ]
        for value, msg in cases:
            with self.subTest(msg=msg), self.assertRaises(at.ValidationError) as cm:
                at.decode(f, value)
            self.assertEqual(str(cm.exception), "invalid arguments: " + msg)
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: unexpected property "x"'
        ):
            at.decode(Shadowed, {"Memo": "", "id": "", "x": 1})

    def test_kwargs_receive_unknown_names_and_open_targets_accept_anything(self) -> None:
        def f(a: int, **rest: int) -> None:
            pass

        self.assertEqual(at.decode(f, {"a": 1, "b": 2.0}), {"a": 1, "b": 2})
        self.assertEqual(at.schema_of(f)["additionalProperties"], {"type": "integer"})
        self.assertEqual(at.decode(dict[str, Any], {"x": [1]}), {"x": [1]})
        self.assertEqual(at.decode(Any, {"x": 1}), {"x": 1})

    def test_union_branch_selection(self) -> None:
        @dataclasses.dataclass
        class Cat:
            meow: str

        @dataclasses.dataclass
        class Dog:
            bark: str
            loud: bool = False

        u = Union[Cat, Dog, int, Literal["none"], str]
        self.assertEqual(at.decode(u, {"bark": "woof"}), Dog("woof"))
        self.assertEqual(at.decode(u, {"meow": "m"}), Cat("m"))
        self.assertEqual(at.decode(u, 3), 3)
        self.assertEqual(at.decode(u, "none"), "none")
        self.assertEqual(at.decode(u, "other"), "other")
        self.assertEqual(at.decode(Union[int, float], 2.5), 2.5)
        self.assertIs(type(at.decode(Union[float, int], 2)), float)
        self.assertEqual(at.decode(Union[bool, int], 1), 1)
        self.assertIs(at.decode(Union[int, bool], True), True)
        # a deeper mismatch falls through to the next fitting branch
        self.assertEqual(at.decode(Union[list[int], list[str]], ["a"]), ["a"])
        self.assertEqual(
            at.decode(Union[datetime.date, str], "soon"),
            "soon",
        )
        with self.assertRaisesRegex(at.ValidationError, r"expected object or object or integer"):
            at.decode(Union[Cat, Dog, int], "x")

    def test_enum_and_literal_decode_to_members(self) -> None:
        self.assertIs(at.decode(Color, 1.0), Color.RED)
        self.assertIs(at.decode(Mixed, 1), Mixed.ONE)
        with self.assertRaisesRegex(at.ValidationError, r"expected one of \[1, 2\], got true"):
            at.decode(Color, True)
        with self.assertRaisesRegex(at.ValidationError, r'expected one of \["a", "b"\], got "c"'):
            at.decode(Literal["a", "b"], "c")

    def test_wrong_shapes_are_refused_with_paths(self) -> None:
        def f(xs: list[Item]) -> None:
            pass

        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"xs": [{"name": "a", "Tags": []}, {"name": "b", "Tags": ["x", 2]}]})
        self.assertEqual(
            str(cm.exception), "invalid arguments: xs[1].Tags[1]: expected string, got 2"
        )
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: xs\[0\]: missing required property "Tags"'
        ):
            at.decode(f, {"xs": [{"name": "a"}]})
        with self.assertRaisesRegex(at.ValidationError, r"expected a UUID"):
            at.decode(uuid.UUID, "nope")
        with self.assertRaisesRegex(at.ValidationError, r"expected a decimal number"):
            at.decode(decimal.Decimal, "1.2.3")

    def test_post_init_value_errors_become_validation_errors(self) -> None:
        def f(p: Positive) -> None:
            pass

        with self.assertRaisesRegex(
            at.ValidationError, r"^invalid arguments: p: n must be positive$"
        ):
            at.decode(f, {"p": {"n": 0}})


class TestArgSpec(unittest.TestCase):
    def test_signature_form_takes_a_dataclass_as_a_property(self) -> None:
        def move(to: Inner) -> None:
            pass

        spec = at._arg_spec(move, strict=False)
        self.assertEqual(list(spec.schema["properties"]), ["to"])
        self.assertEqual(spec.decode({"to": {"deep": True}}), {"to": Inner(True)})

    def test_struct_form(self) -> None:
        def read(args: ReadFileArgs) -> None:
            pass

        spec = at._arg_spec(read, strict=True, struct=True)
        self.assertEqual(spec.schema["required"], ["path", "max_bytes"])
        self.assertEqual(
            spec.decode({"path": "/a", "max_bytes": None}), {"args": ReadFileArgs("/a", 0)}
        )
        with self.assertRaisesRegex(
            at.ValidationError, r'^invalid arguments: unexpected property "x"'
        ):
            spec.decode({"path": "/a", "max_bytes": 1, "x": 1})

        def two(a: ReadFileArgs, b: int) -> None:
            pass

        with self.assertRaisesRegex(TypeError, "exactly one parameter"):
            at._arg_spec(two, strict=False, struct=True)

        def scalar(a: int) -> None:
            pass

        with self.assertRaisesRegex(TypeError, r'parameter "a": struct=True needs'):
            at._arg_spec(scalar, strict=False, struct=True)

    def test_struct_form_with_a_recursive_root(self) -> None:
        def walk(node: Node) -> None:
            pass

        spec = at._arg_spec(walk, strict=False, struct=True)
        self.assertEqual(spec.schema["properties"]["children"]["items"], {"$ref": "#"})
        self.assertEqual(
            spec.decode({"value": 1, "children": [{"value": 2}]}), {"node": Node(1, [Node(2)])}
        )

    def test_partials_methods_and_async_functions(self) -> None:
        def f(a: int, b: str) -> None:
            pass

        self.assertEqual(list(at.schema_of(functools.partial(f, 1))["properties"]), ["b"])

        class K:
            def m(self, x: int) -> None:
                pass

            async def am(self, y: int) -> None:
                pass

        self.assertEqual(list(at.schema_of(K().m)["properties"]), ["x"])
        self.assertEqual(list(at.schema_of(K().am)["properties"]), ["y"])

    def test_no_args(self) -> None:
        self.assertEqual(at._arg_spec(no_args, strict=False).decode({}), {})
        with self.assertRaisesRegex(at.ValidationError, r'unexpected property "a"'):
            at._arg_spec(no_args, strict=False).decode({"a": 1})


if __name__ == "__main__":
    unittest.main()
