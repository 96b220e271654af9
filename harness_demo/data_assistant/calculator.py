"""Arithmetic without eval: the expression is parsed to a Python AST and walked node by node.

Only numbers, + - * / // % **, unary + and -, and parentheses get through. Sizes are bounded before
the work is done: the input length, the exponent of a power and the size of every intermediate
result, so that "9**999999" is refused at once instead of keeping a CPU busy.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

MAX_EXPRESSION_CHARS = 200
MAX_RESULT_BITS = 4096  # about 1,233 decimal digits
_ALLOWED = "numbers, + - * / // % **, unary + and -, and parentheses"

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class CalculatorError(ValueError):
    """An expression the calculator refuses, with what it accepts instead."""


def calculate(expression: str) -> Number:
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"the expression is {len(expression)} characters long; the limit is {MAX_EXPRESSION_CHARS}"
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression ({exc.msg}); allowed: {_ALLOWED}") from None
    return _evaluate(tree.body)


def _evaluate(node: ast.AST) -> Number:
    match node:
        case ast.Constant(value=bool() as value):
            raise CalculatorError(f"{value} is not a number; allowed: {_ALLOWED}")
        case ast.Constant(value=int() | float() as value):
            return _checked(value)
        case ast.Constant(value=value):
            raise CalculatorError(f"only numbers are allowed, not {type(value).__name__} {value!r}")
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            left_value, right_value = _evaluate(left), _evaluate(right)
            if isinstance(op, ast.Pow):
                _check_power(left_value, right_value)
            try:
                return _checked(_BINARY[type(op)](left_value, right_value))
            except OverflowError:
                raise CalculatorError("the result is too large") from None
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _checked(_UNARY[type(op)](_evaluate(operand)))
        case ast.Name(id=name):
            raise CalculatorError(f"names are not allowed ({name!r}); allowed: {_ALLOWED}")
        case ast.Call():
            raise CalculatorError(f"function calls are not allowed; allowed: {_ALLOWED}")
        case ast.Attribute(attr=attr):
            raise CalculatorError(f"attribute access is not allowed (.{attr}); allowed: {_ALLOWED}")
        case ast.Subscript():
            raise CalculatorError(f"indexing is not allowed; allowed: {_ALLOWED}")
        case ast.BinOp(op=op) | ast.UnaryOp(op=op):
            raise CalculatorError(f"the operator {type(op).__name__} is not allowed; allowed: {_ALLOWED}")
        case _:
            raise CalculatorError(f"{type(node).__name__} is not allowed; allowed: {_ALLOWED}")


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse a power whose result would be too large, before computing it."""
    if abs(base) <= 1 or exponent <= 0:
        return  # the result's magnitude is at most |base| or at most 1: small either way
    if isinstance(base, float) or isinstance(exponent, float):
        estimated_bits = float(exponent) * math.log2(abs(base))
    else:
        estimated_bits = exponent * (abs(base).bit_length() - 1)
    if estimated_bits > MAX_RESULT_BITS:
        raise CalculatorError(
            f"{base} ** {exponent} is too large (about {_digits(estimated_bits)} digits; "
            f"the limit is about {_digits(MAX_RESULT_BITS)})"
        )


def _checked(value: Number) -> Number:
    if isinstance(value, complex):
        raise CalculatorError("the result is not a real number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not a finite number (too large)")
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise CalculatorError(
            f"the result has about {_digits(value.bit_length())} digits; the limit is about {_digits(MAX_RESULT_BITS)}"
        )
    return value


def _digits(bits: float) -> str:
    return f"{int(bits * math.log10(2)) + 1:,}"
