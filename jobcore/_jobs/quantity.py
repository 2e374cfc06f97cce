"""Kubernetes resource quantities (`500m`, `1.5Gi`, `2`, `1e3`): read, summed, written.

Exact arithmetic (fractions), so that sums such as a gang's minResources carry no rounding.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from jobcore._runtime.errors import JobcoreError

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)


_MAX_DIGITS = 40
_MAX_EXPONENT = 30
"""Bounds far beyond any quantity the API server stores (it holds them in 64 bits, with at
most exa (10^18) as a suffix), so that reading a hostile one costs nothing."""


class QuantityError(JobcoreError, ValueError):
    """Not a Kubernetes quantity, or one far beyond what Kubernetes stores."""


def parse_quantity(value: object) -> tuple[Fraction, bool]:
    """The quantity's exact value, and whether it was written with a binary suffix (`Gi`).

    A JSON number (`cpu: 1`) is read as its decimal text; raises QuantityError otherwise, and
    for more than _MAX_DIGITS digits or an exponent beyond _MAX_EXPONENT.
    """
    readable = isinstance(value, int | float | str) and not isinstance(value, bool)
    match = _QUANTITY.fullmatch(str(value).strip()) if readable else None
    if match is None:
        raise QuantityError(f"not a quantity: {value!r}")
    suffix, exponent = match["suffix"], match["exponent"]
    if len(match["number"]) > _MAX_DIGITS or (
        exponent is not None and (len(exponent) > 4 or abs(int(exponent)) > _MAX_EXPONENT)
    ):
        raise QuantityError(f"a quantity beyond what Kubernetes stores: {str(value)[:50]!r}")
    number = Fraction(match["number"])
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
