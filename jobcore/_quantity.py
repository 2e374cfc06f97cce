"""Kubernetes resource quantities (`500m`, `1.5Gi`, `2`, `1e3`): read, summed, written.

Exact arithmetic (fractions), so that sums such as a gang's minResources carry no rounding.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(value: object) -> tuple[Fraction, bool]:
    """The quantity's exact value, and whether it was written with a binary suffix (`Gi`).

    A JSON number (`cpu: 1`) is read as its decimal text; raises QuantityError otherwise.
    """
    readable = isinstance(value, int | float | str) and not isinstance(value, bool)
    match = _QUANTITY.fullmatch(str(value).strip()) if readable else None
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    number = Fraction(match["number"])
    suffix, exponent = match["suffix"], match["exponent"]
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix], True
    power = int(exponent) if exponent is not None else _DECIMAL[suffix or ""]
    return number * Fraction(10) ** power, False


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """`value` as a quantity: a binary suffix when `binary` and it divides evenly (`3Gi`);
    else an integer, or milli-, micro- or nano-units, rounded up to a nano-unit."""
    if binary and value.denominator == 1 and value:
        for suffix, power in reversed(_BINARY.items()):
            if value % 1024**power == 0:
                return f"{value // 1024**power}{suffix}"
    for suffix, power in (("", 0), ("m", 3), ("u", 6)):
        scaled = value * 10**power
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{math.ceil(value * 10**9)}n"
