"""Types people write now (PEP 695 aliases, generics, TypeVars, Unpack), Decimal and init=False
round trips, validate_json's input errors, and patterns' pinned Unicode data."""

from __future__ import annotations

import dataclasses
import decimal
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
import unittest
from typing import Any, Generic, TypeVar

import agenttool as at
from test_agenttool import limit_test_time, needs, slow

limit_test_time()

try:
    import typing_extensions as te
except ImportError:  # pragma: no cover - the dev venv has it
    te = None  # type: ignore[assignment]

PEP695 = sys.version_info >= (3, 12)
T = TypeVar("T")


def module_of(source: str, name: str) -> types.ModuleType:
    """A module made from source (syntax this Python may lack), registered so that its
    annotations and forward references resolve."""
    mod = types.ModuleType(name)
    mod.__dict__["__name__"] = name
    sys.modules[name] = mod
    exec(compile(textwrap.dedent(source), name, "exec", dont_inherit=True), mod.__dict__)
    return mod


def roundtrip(tp: Any, value: Any) -> Any:
    """What output() writes for value, decoded back as tp."""
    text = at.output(value).output
    data = json.loads(text) if isinstance(text, str) else text
    return at.decode(tp, data)


@dataclasses.dataclass
class Box(Generic[T]):
    item: T
    many: list[T]


class IntBox(Box[int]):
    pass


Bound = TypeVar("Bound", bound=int)
Constrained = TypeVar("Constrained", int, str)
Num = TypeVar("Num", bound=float)


@dataclasses.dataclass
class Measure(Generic[Num]):
    value: Num


@dataclasses.dataclass
class Order:
    qty: int
    price: float
    total: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.total = self.qty * self.price


@dataclasses.dataclass(frozen=True)
class Tag:
    name: str
    seen: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass
class Holder:
    tags: list[Tag]


class TestRecursiveAliases(unittest.TestCase):
    @unittest.skipUnless(PEP695, "the type statement is 3.12+")
    def test_type_statement_recursive_alias_is_a_ref(self) -> None:
        mod = module_of(
            """
            type Tree = dict[str, Tree] | int
            def f(t: Tree) -> None: ...
            """,
            "_types_alias_tree",
        )
        schema = at.schema_of(mod.f)
        self.assertEqual(schema["properties"]["t"], {"$ref": "#/$defs/Tree"})
        tree = schema["$defs"]["Tree"]
        self.assertIn({"type": "integer"}, tree["anyOf"])
        self.assertIn(
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/Tree"}}, tree["anyOf"]
        )
        self.assertEqual(
            at.decode(mod.f, {"t": {"a": {"b": 1}, "c": 2}}), {"t": {"a": {"b": 1}, "c": 2}}
        )
        with self.assertRaises(at.ValidationError) as cm:
            at.decode(mod.f, {"t": {"a": {"b": "x"}}})
        self.assertIn("t.a.b", str(cm.exception))
        v = at.validator(schema)
        v.validate({"t": {"a": {"b": 1}}})
        with self.assertRaises(at.ValidationError):
            v.validate({"t": {"a": {"b": "x"}}})

    @unittest.skipUnless(PEP695, "the type statement is 3.12+")
    def test_recursive_alias_at_the_root_refers_to_itself(self) -> None:
        mod = module_of("type Json = list[Json] | str | None\n", "_types_alias_json")
        schema = at.schema_of(mod.Json)
        self.assertIn({"type": "array", "items": {"$ref": "#"}}, schema["anyOf"])
        at.validator(schema).validate(["a", ["b", None]])
        self.assertEqual(at.decode(mod.Json, ["a", ["b", None]]), ["a", ["b", None]])

    @unittest.skipUnless(PEP695, "typing.TypeAliasType is 3.12+")
    def test_typing_type_alias_type_with_forward_reference(self) -> None:
        mod = module_of(
            """
            import typing
            Tree = typing.TypeAliasType("Tree", dict[str, "Tree"] | int)
            def f(t: Tree) -> None: ...
            """,
            "_types_alias_tat",
        )
        schema = at.schema_of(mod.f)
        self.assertEqual(schema["properties"]["t"], {"$ref": "#/$defs/Tree"})
        self.assertEqual(at.decode(mod.f, {"t": {"a": 3}}), {"t": {"a": 3}})

    @needs(te is not None, "typing_extensions")
    def test_typing_extensions_type_alias_type_on_every_version(self) -> None:
        mod = module_of(
            """
            from typing import Dict, List, Union
            import typing_extensions as te
            Tree = te.TypeAliasType("Tree", Union[Dict[str, "Tree"], List["Tree"], int])
            def f(t: Tree) -> None: ...
            """,
            "_types_alias_te",
        )
        schema = at.schema_of(mod.f)
        self.assertEqual(schema["properties"]["t"], {"$ref": "#/$defs/Tree"})
        self.assertEqual(at.decode(mod.f, {"t": [{"a": 1}, 2]}), {"t": [{"a": 1}, 2]})

    @unittest.skipUnless(PEP695, "the type statement is 3.12+")
    def test_mutually_recursive_aliases(self) -> None:
        mod = module_of(
            """
            type A = list[B] | int
            type B = dict[str, A]
            def f(a: A) -> None: ...
            """,
            "_types_alias_mutual",
        )
        schema = at.schema_of(mod.f)
        at.validator(schema).validate({"a": [{"x": [{"y": 1}]}, {"z": 2}]})
        self.assertEqual(at.decode(mod.f, {"a": [{"x": 1}]}), {"a": [{"x": 1}]})


class TestGenerics(unittest.TestCase):
    def test_parameterised_generic_dataclass(self) -> None:
        def f(b: Box[int]) -> None: ...

        schema = at.schema_of(f)
        self.assertEqual(
            schema["properties"]["b"]["properties"],
            {"item": {"type": "integer"}, "many": {"type": "array", "items": {"type": "integer"}}},
        )
        out = at.decode(f, {"b": {"item": 1, "many": [2]}})["b"]
        self.assertEqual(out, Box(1, [2]))
        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"b": {"item": "x", "many": []}})
        self.assertIn("b.item", str(cm.exception))

    def test_two_parameterisations_of_one_class(self) -> None:
        def f(a: Box[int], b: Box[str]) -> None: ...

        schema = at.schema_of(f)
        self.assertEqual(schema["properties"]["a"]["properties"]["item"], {"type": "integer"})
        self.assertEqual(schema["properties"]["b"]["properties"]["item"], {"type": "string"})

    def test_subclass_of_a_parameterised_generic(self) -> None:  # beyond the report
        schema = at.schema_of(IntBox)
        self.assertEqual(schema["properties"]["item"], {"type": "integer"})
        self.assertEqual(at.decode(IntBox, {"item": 3, "many": []}), IntBox(3, []))

    def test_generic_typeddict_and_namedtuple(self) -> None:
        if sys.version_info < (3, 11):
            self.skipTest("generic TypedDict and NamedTuple are 3.11+")
        mod = module_of(
            """
            from typing import Generic, NamedTuple, TypedDict, TypeVar
            T = TypeVar("T")
            class TD(TypedDict, Generic[T]):
                v: T
            class NT(NamedTuple, Generic[T]):
                v: T
            """,
            "_types_generic_td",
        )
        self.assertEqual(at.schema_of(mod.TD[int])["properties"]["v"], {"type": "integer"})
        self.assertEqual(at.schema_of(mod.NT[str])["properties"]["v"], {"type": "string"})
        self.assertEqual(at.decode(mod.NT[str], {"v": "x"}), mod.NT("x"))

    @unittest.skipUnless(PEP695, "PEP 695 is 3.12+")
    def test_pep695_class_and_parameterised_alias(self) -> None:
        mod = module_of(
            """
            import dataclasses
            @dataclasses.dataclass
            class Box[T]:
                item: T
            type Pair[T] = tuple[T, T]
            def f(b: Box[str], p: Pair[int]) -> None: ...
            """,
            "_types_pep695",
        )
        schema = at.schema_of(mod.f)
        self.assertEqual(schema["properties"]["b"]["properties"]["item"], {"type": "string"})
        self.assertEqual(schema["properties"]["p"]["prefixItems"], [{"type": "integer"}] * 2)
        self.assertEqual(at.decode(mod.f, {"b": {"item": "x"}, "p": [1, 2]})["p"], (1, 2))

    @unittest.skipUnless(PEP695, "PEP 695 is 3.12+")
    def test_pep695_class_under_future_annotations(self) -> None:  # beyond the report
        mod = module_of(
            """
            from __future__ import annotations
            import dataclasses
            @dataclasses.dataclass
            class Box[T]:
                item: T
                more: list[T]
            """,
            "_types_pep695_future",
        )
        self.assertEqual(at.schema_of(mod.Box[int])["properties"]["item"], {"type": "integer"})

    def test_typevar_bound_constraints_default(self) -> None:
        def f(a: Bound, b: Constrained) -> None: ...

        schema = at.schema_of(f)
        self.assertEqual(schema["properties"]["a"], {"type": "integer"})
        self.assertEqual(schema["properties"]["b"], {"type": ["integer", "string"]})
        if te is not None:
            mod = module_of(
                """
                import dataclasses
                from typing import Generic
                import typing_extensions as te
                D = te.TypeVar("D", default=str)
                @dataclasses.dataclass
                class Defaulted(Generic[D]):
                    v: D
                """,
                "_types_defaulted",
            )
            self.assertEqual(at.schema_of(mod.Defaulted)["properties"]["v"], {"type": "string"})

    def test_bare_generic_class_uses_the_bound(self) -> None:  # beyond the report
        self.assertEqual(at.schema_of(Measure)["properties"]["value"], {"type": "number"})

    def test_a_free_type_variable_is_refused_naming_it(self) -> None:
        def f(b: Box) -> None: ...  # type: ignore[type-arg]

        with self.assertRaises(TypeError) as cm:
            at.schema_of(f)
        msg = str(cm.exception)
        self.assertIn("~T", msg)
        self.assertIn("Box[int]", msg)
        self.assertNotIn("supported: list", msg)

    def test_unknown_generic_class_names_the_form(self) -> None:
        class Other(Generic[T]):
            pass

        def f(x: Other[int]) -> None: ...

        with self.assertRaises(TypeError) as cm:
            at.schema_of(f)
        self.assertIn("Other[int]", str(cm.exception))
        self.assertNotIn("supported: list", str(cm.exception))

    @needs(te is not None, "typing_extensions")
    def test_unpack_typeddict_kwargs_are_named_parameters(self) -> None:
        mod = module_of(
            """
            from typing import Any
            import typing_extensions as te
            class Opts(te.TypedDict):
                limit: int
                name: te.NotRequired[str]
            def f(q: str, **kwargs: te.Unpack[Opts]) -> dict[str, Any]:
                return dict(kwargs)
            """,
            "_types_unpack",
        )
        f = mod.f
        schema = at.schema_of(f)
        self.assertEqual(list(schema["properties"]), ["q", "limit", "name"])
        self.assertEqual(schema["required"], ["q", "limit"])
        self.assertEqual(at.decode(f, {"q": "a", "limit": 2}), {"q": "a", "limit": 2})
        with self.assertRaises(at.ValidationError) as cm:
            at.decode(f, {"q": "a", "limit": 2, "other": 1})
        self.assertIn('unexpected property "other"', str(cm.exception))
        with self.assertRaises(at.ValidationError):
            at.decode(f, {"q": "a", "limit": "x"})

    @needs(te is not None, "typing_extensions")
    def test_unpack_of_a_typeddict_clashing_with_a_parameter(self) -> None:
        mod = module_of(
            """
            import typing_extensions as te
            class Opts(te.TypedDict):
                q: int
            def f(q: str, **kwargs: te.Unpack[Opts]) -> None: ...
            """,
            "_types_unpack_clash",
        )
        with self.assertRaises(TypeError) as cm:
            at.schema_of(mod.f)
        self.assertIn('"q"', str(cm.exception))


class TestDecimalAndRoundTrips(unittest.TestCase):
    def test_exponent_forms_the_library_writes_are_accepted(self) -> None:
        def f(d: decimal.Decimal) -> None: ...

        v = at.validator(at.schema_of(f))
        for text in ("0E-8", "1E+2", "1.23E-7", "-4.5e3", "12", "-0.50"):
            v.validate({"d": text})
            self.assertEqual(at.decode(f, {"d": text})["d"], decimal.Decimal(text))

    def test_decimal_values_round_trip(self) -> None:
        for d in ("0.00000000", "100", "1E+2", "1.23E-7", "-0", "3.14159265358979323846"):
            value = decimal.Decimal(d)
            back = roundtrip(decimal.Decimal, value)
            self.assertEqual(str(back), str(value))
            at.validator(at.schema_of(decimal.Decimal)).validate(str(value))

    def test_decoder_and_schema_agree_on_decimal_text(self) -> None:  # beyond the report
        v = at.validator(at.schema_of(decimal.Decimal))
        for text in (" 1", "1_000", "Infinity", "1e", ".5", "+1"):
            with self.assertRaises(at.ValidationError):
                v.validate(text)
            with self.assertRaises(at.ValidationError, msg=text):
                at.decode(decimal.Decimal, text)

    def test_init_false_field_written_by_output_is_accepted(self) -> None:
        order = Order(2, 1.5)
        self.assertEqual(roundtrip(Order, order), order)
        self.assertNotIn("total", at.schema_of(Order)["properties"])

    def test_init_false_with_default_in_a_nested_frozen_dataclass(self) -> None:
        h = Holder([Tag("a")])
        self.assertEqual(roundtrip(Holder, h), h)
        self.assertEqual(at.decode(Tag, {"name": "b", "seen": 0}), Tag("b"))


class TestValidatorSource(unittest.TestCase):
    def test_the_generated_source_is_shown_and_is_what_runs(self) -> None:
        v = at.validator({"type": "object", "properties": {"n": {"type": "integer"}}})
        self.assertTrue(v.source.startswith("def validate(x):"))
        self.assertIn("'n'", v.source)
        compile(v.source, "<shown>", "exec")  # Python as it stands
        self.assertTrue(at.validator(True).source.startswith("def validate(x):"))


class TestValidateJsonInput(unittest.TestCase):
    def test_not_text_is_a_validation_error(self) -> None:
        v = at.validator({"type": "integer"})
        for bad in (5, None, 1.5, ["1"]):
            with self.assertRaises(at.ValidationError) as cm:
                v.validate_json(bad)  # type: ignore[arg-type]
            self.assertIn("expected JSON text", str(cm.exception))
            self.assertIn(type(bad).__name__, str(cm.exception))
            self.assertEqual(str(cm.exception).count("invalid arguments"), 1)  # said once

    def test_bom_prefixed_text_says_so(self) -> None:
        v = at.validator({"type": "integer"})
        with self.assertRaises(at.ValidationError) as cm:
            v.validate_json("\ufeff5")
        self.assertIn("byte order mark", str(cm.exception))
        self.assertEqual(str(cm.exception).count("not valid JSON"), 1)
        self.assertEqual(v.validate_json("5"), 5)

    def test_bom_after_whitespace_or_in_bytes(self) -> None:  # beyond the report
        v = at.validator({"type": "integer"})
        with self.assertRaises(at.ValidationError) as cm:
            v.validate_json(" \ufeff5")
        self.assertIn("byte order mark", str(cm.exception))
        self.assertEqual(v.validate_json(b"\xef\xbb\xbf5"), 5)


OTHER_PYTHONS = {v: f"/root/.pyenv/versions/{v}/bin/python" for v in ("3.9.18", "3.13.0")}


class TestOneMeaningAcrossVersions(unittest.TestCase):
    SNIPPET = textwrap.dedent(
        """
        import dataclasses, decimal, json, sys
        from typing import Generic, TypeVar, Optional
        import agenttool as at
        T = TypeVar("T")
        N = TypeVar("N", bound=int)
        @dataclasses.dataclass
        class Box(Generic[T]):
            item: T
            n: Optional[N] = None
        def f(b: Box[str], d: decimal.Decimal, c: N) -> None: ...
        print(json.dumps(at.schema_of(f), sort_keys=False))
        """
    )

    @slow
    def test_same_schema_on_39_and_313(self) -> None:
        outs = set()
        for exe in OTHER_PYTHONS.values():
            if not shutil.which(exe):
                self.skipTest(f"{exe} absent")
            run = subprocess.run(
                [exe, "-c", self.SNIPPET], capture_output=True, text=True, timeout=60
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            outs.add(run.stdout)
        self.assertEqual(len(outs), 1, outs)


if __name__ == "__main__":
    unittest.main()


NODE = shutil.which("node")
ROOT = os.path.dirname(os.path.abspath(__file__))
# Code points whose \p{..} verdicts differ between the Unicode versions Pythons 3.9 to 3.13 carry
# (13.0 to 15.1) and the pinned one, with what node (Unicode 17.0) says; the same everywhere.
PINNED_VERDICTS = [
    ("^\\p{L}$", 0x0870, True),  # ARABIC LETTER ALEF WITH ATTACHED FATHA, Unicode 14.0
    ("^\\p{L}$", 0x11F04, True),  # KAWI LETTER A, Unicode 15.0
    ("^\\p{Lo}$", 0x2EBF0, True),  # CJK Extension I, Unicode 15.1
    ("^\\p{L}$", 0x16100, True),  # GURUNG KHEMA LETTER A, Unicode 16.0
    ("^\\p{So}$", 0x1CC00, True),  # UP-POINTING GO-KART, Unicode 16.0
    ("^\\p{Cn}$", 0x16100, False),
    ("^\\p{Assigned}$", 0x11F04, True),
    ("^\\p{Emoji}$", 0x1FAE8, True),  # SHAKING FACE, Unicode 15.0
    ("^\\p{ID_Start}$", 0x16100, True),
    ("^\\p{Emoji}$", 0x41, False),
]


def node(*args: str) -> str:
    """What node prints for ``args``, run in the repository."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, *args], capture_output=True, text=True, check=True, timeout=120, cwd=ROOT
    )
    return done.stdout


def verdict(pattern: str, cp: int) -> bool:
    try:
        at.validator({"type": "string", "pattern": pattern}).validate(chr(cp))
    except at.ValidationError:
        return False
    return True


class TestPinnedUnicode(unittest.TestCase):
    """\\p{..} reads the Unicode tables agenttool.py carries, not this Python's unicodedata."""

    def test_the_same_code_points_give_the_same_verdicts_on_every_python(self) -> None:
        for pattern, cp, expected in PINNED_VERDICTS:
            with self.subTest(pattern=pattern, code_point=hex(cp)):
                self.assertEqual(verdict(pattern, cp), expected)

    def test_binary_properties_and_their_short_names(self) -> None:
        for long, short in (("Alphabetic", "Alpha"), ("Emoji_Presentation", "EPres")):
            self.assertEqual(at._property_ranges(long), at._property_ranges(short))
        self.assertTrue(verdict("^\\p{ExtPict}\\p{EComp}?$", 0x1F600))
        self.assertTrue(verdict("^\\P{Emoji}$", 0x61))
        self.assertTrue(verdict("^\\p{AHex}$", ord("f")))
        with self.assertRaisesRegex(at.SchemaError, "not a valid regex"):
            at.validator({"pattern": "\\p{Emojis}"})

    def skip_unless_node_is_pinned(self) -> None:
        version = node("-p", "process.versions.unicode").strip()
        if version != at._UNICODE_VERSION:
            self.skipTest(f"node carries Unicode {version}, the tables {at._UNICODE_VERSION}")

    @slow  # node reads every code point for each of 77 properties: 3 s
    @needs(NODE is not None, "node is not installed")
    def test_the_tables_are_what_the_generator_prints_from_node(self) -> None:
        self.skip_unless_node_is_pinned()
        printed = node("testdata/unicode_tables.js")
        with open(os.path.join(ROOT, "agenttool.py"), encoding="utf-8") as f:
            source = f.read()
        block = source.split("# unicode tables: begin\n")[1].split("# unicode tables: end\n")[0]
        self.assertEqual(block, printed)

    @needs(NODE is not None, "node is not installed")
    def test_every_sampled_code_point_has_node_s_verdict(self) -> None:
        import random

        rng = random.Random(17)
        cps = sorted(
            {rng.randrange(0x110000) for _ in range(3000)} | {c for _, c, _ in PINNED_VERDICTS}
        )
        cps = [c for c in cps if not 0xD800 <= c <= 0xDFFF]
        props = [
            "L",
            "Lu",
            "Nd",
            "P",
            "S",
            "Cn",
            "Co",
            "Mn",
            "Emoji",
            "Alphabetic",
            "ID_Continue",
            "Math",
        ]
        script = (
            "const cps = JSON.parse(process.argv[1]), props = JSON.parse(process.argv[2]);"
            "console.log(JSON.stringify(props.map(p => cps.map(c =>"
            " new RegExp(`^\\\\p{${p}}$`, 'u').test(String.fromCodePoint(c))))));"
        )
        self.skip_unless_node_is_pinned()
        answers_of = json.loads(node("-e", script, json.dumps(cps), json.dumps(props)))
        for prop, answers in zip(props, answers_of):
            ours = [verdict(f"^\\p{{{prop}}}$", c) for c in cps]
            wrong = [hex(c) for c, a, b in zip(cps, answers, ours) if a != b]
            self.assertEqual(wrong, [], prop)
