"""The questions about the intermediate form have one owner (`nbtools.ir`); the copies that used to
live in dispatch, the inverse and introspection disagreed on these cases."""

import asyncio
import enum

from nbtools import Tool, ir


class Maybe(enum.Enum):
    NOTHING = None
    SOMETHING = "something"


def test_an_enum_with_a_none_value_accepts_null():
    # the inverse's copy forgot Enum: it said such a field could not hold null
    node = ir.Enum(cls=Maybe, values=(None, "something"))
    assert ir.accepts_null(node)
    assert not ir.accepts_null(ir.Enum(cls=Maybe, values=("something",)))
    assert ir.accepts_null(ir.Union(options=(ir.Int(), ir.NoneValue())))
    assert not ir.accepts_null(ir.Union(options=(ir.Int(), ir.Str())))


def test_async_generator_functions_are_async_everywhere():
    # Tool.from_schema's copy of "is async" missed async generators (introspection had them)
    async def numbers(**arguments):
        for number in range(arguments["n"]):
            yield number

    from_schema = Tool.from_schema("numbers", "", {"type": "object", "properties": {"n": {"type": "integer"}}},
                                   numbers)
    assert from_schema.is_async

    async def counted(n: int):
        for number in range(n):
            yield number

    assert Tool.from_function(counted).is_async
    assert ir.is_async(counted) and not ir.is_async(len)

    class Caller:
        async def __call__(self, x: int) -> int:
            return x

    assert ir.is_async(Caller())
    assert asyncio.run(Tool.from_function(Caller()).acall({"x": 3})) == 3


def test_kinds_and_depths():
    assert ir.kind_of(True) == "boolean" and ir.kind_of(3) == "integer" and ir.kind_of(object()) is None
    assert ir.accepted_kinds(ir.Literal(values=(1, "a"))) == {"integer", "number", "string"}
    assert ir.static_depth(ir.Array(item=ir.Map(value=ir.Int()))) == 2
    assert ir.static_depth(ir.Array(item=ir.AnyValue())) is None
    assert ir.is_scalar(ir.Union(options=(ir.Int(), ir.Literal(values=("x",)))))
    assert not ir.is_scalar(ir.Array())
    assert ir.children(ir.Map(key=ir.Str(), value=ir.Int())) == (ir.Str(), ir.Int())
