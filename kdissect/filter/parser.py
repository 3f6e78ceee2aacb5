"""Tokens into a tree: the grammar of docs/filters.md, by recursive descent.

    expr     := and ( ("or" | "||") and )*
    and      := unary ( ("and" | "&&") unary )*
    unary    := ("not" | "!") unary | primary
    primary  := "(" expr ")" | ("all" | "any") "(" test ")" | test
    test     := value [ compare literal | "in" "{" literal ("," literal)* "}" | ("contains" | "matches") literal ]
    value    := FIELD | ("count" | "len") "(" FIELD ")"
    literal  := NUMBER | STRING | WORD | NUMBER ".." NUMBER (in a set)

The tree keeps every token, so compilation can say where a field or a literal is wrong. An expression nests at
most `MAX_DEPTH` levels (each "(", "not" and quantifier is one): its tree is then walked, compiled and evaluated
by recursion in bounded depth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, Union

from kdissect.filter.errors import FilterError
from kdissect.filter.lexer import Token, tokens

T = TypeVar("T")
COMPARE = frozenset({"==", "!=", "<", "<=", ">", ">="})
QUANTIFIERS = frozenset({"all", "any"})
FUNCTIONS = frozenset({"count", "len"})
MAX_DEPTH = 64
"""The deepest an expression nests: parentheses, `not` and `all(...)`/`any(...)` each open a level."""


@dataclass(frozen=True, slots=True)
class Value:
    """A field (`function` None), or count(FIELD) / len(FIELD)."""

    field: Token
    function: Token | None = None


@dataclass(frozen=True, slots=True)
class Test:
    """`value op literals`, or the bare value (op None: present and not empty or zero)."""

    value: Value
    op: Token | None = None
    literals: tuple[Token, ...] = ()


@dataclass(frozen=True, slots=True)
class Quantified:
    """all(test) or any(test): over every value of the test's field."""

    quantifier: Token
    test: Test


@dataclass(frozen=True, slots=True)
class Not:
    item: Node


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Node, ...]


Node = Union[Test, Quantified, Not, And, Or]


def parse(text: str) -> Node:
    """The tree of a filter expression; a FilterError (with its column) for anything that does not parse."""
    parser = _Parser(tokens(text))
    if parser.peek().kind == "end":
        raise FilterError("the filter is empty", 1)
    node = parser.expr()
    parser.finish()
    return node


def fields_of(node: Node) -> set[str]:
    """The field names a tree uses, as written."""
    if isinstance(node, Test):
        return {node.value.field.text}
    if isinstance(node, Quantified):
        return fields_of(node.test)
    if isinstance(node, Not):
        return fields_of(node.item)
    return set().union(*(fields_of(item) for item in node.items))


def parse_value(text: str) -> Value:
    """A field expression for -e: FIELD, count(FIELD) or len(FIELD)."""
    parser = _Parser(tokens(text))
    value = parser.value()
    parser.finish()
    return value


class _Parser:
    def __init__(self, items: list[Token]) -> None:
        self.items = items
        self.at = 0
        self.open: list[Token] = []
        """The parentheses open around the current position, to name the one left unclosed."""
        self.depth = 0
        """Levels open around the current position: parentheses and `not`."""

    def peek(self, ahead: int = 0) -> Token:
        return self.items[min(self.at + ahead, len(self.items) - 1)]

    def take(self) -> Token:
        token = self.peek()
        self.at += 1
        return token

    def is_op(self, *names: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in names

    def expect(self, kind: str, what: str) -> Token:
        token = self.peek()
        if token.kind != kind:
            raise self.unexpected(what)
        return self.take()

    def unexpected(self, wanted: str) -> FilterError:
        token = self.peek()
        if token.kind == "end":
            if self.open:
                return FilterError("this '(' is never closed", self.open[-1].column)
            return FilterError(f"the filter ends where {wanted} should follow", token.column)
        if token.kind == ")" and not self.open:
            return FilterError("this ')' closes nothing", token.column)
        return FilterError(f"expected {wanted}, found {_shown(token)}", token.column)

    def finish(self) -> None:
        if self.peek().kind != "end":
            raise self.unexpected("'and', 'or' or the end of the filter")

    def expr(self) -> Node:
        items = [self.conjunction()]
        while self.is_op("or"):
            self.take()
            items.append(self.conjunction())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def conjunction(self) -> Node:
        items = [self.unary()]
        while self.is_op("and"):
            self.take()
            items.append(self.unary())
        return items[0] if len(items) == 1 else And(tuple(items))

    def unary(self) -> Node:
        if self.is_op("not"):
            self.deeper(self.take())
            item = self.unary()
            self.depth -= 1
            return Not(item)
        return self.primary()

    def deeper(self, token: Token) -> None:
        """Open one more level at `token`; past `MAX_DEPTH` the expression is refused."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterError(f"the filter nests more than {MAX_DEPTH} levels deep (parentheses and 'not' each open one)", token.column)

    def enclosed(self, inner: Callable[[], T], closing: str) -> T:
        """What `inner` reads between the '(' at hand and its ')'; `closing` says what was expected instead."""
        self.open.append(self.take())
        self.deeper(self.open[-1])
        found = inner()
        if self.peek().kind != ")":
            raise self.unexpected(closing)
        self.take()
        self.open.pop()
        self.depth -= 1
        return found

    def primary(self) -> Node:
        token = self.peek()
        if token.kind == "(":
            return self.enclosed(self.expr, "')'")
        if token.kind == "word" and token.text in QUANTIFIERS and self.peek(1).kind == "(":
            self.take()
            return Quantified(token, self.enclosed(self.test, f"')' closing {token.text}(...), which holds one comparison"))
        return self.test()

    def value(self) -> Value:
        token = self.peek()
        if token.kind == "word" and token.text in FUNCTIONS and self.peek(1).kind == "(":
            self.take()
            return Value(self.enclosed(lambda: self.expect("word", "a field"), f"')' closing {token.text}(...)"), token)
        if token.kind != "word":
            raise self.unexpected("a field")
        return Value(self.take())

    def test(self) -> Test:
        value = self.value()
        if self.is_op(*COMPARE, "contains", "matches"):
            op = self.take()
            return Test(value, op, (self.literal(op),))
        if self.is_op("in"):
            op = self.take()
            self.expect("{", "'{' opening the set of values")
            literals = [self.literal(op)]
            while self.peek().kind == ",":
                self.take()
                literals.append(self.literal(op))
            self.expect("}", "',' or '}' closing the set")
            return Test(value, op, tuple(literals))
        return Test(value)

    def literal(self, op: Token) -> Token:
        token = self.peek()
        if token.kind not in ("number", "string", "word"):
            raise self.unexpected(f"a value after {op.text!r}")
        return self.take()


def _shown(token: Token) -> str:
    return {"(": "'('", ")": "')'", "{": "'{'", "}": "'}'", ",": "','"}.get(token.kind, repr(token.text))
