"""A kind author's check of the kind as a whole: what the controller refuses, and more.

The controller refuses a kind with a missing member, an invalid resource, or an attribute that
looks like a misspelt hook; `assert_valid_kind` fails on those and on every other public
attribute that is neither a `JobKind` member nor `hooks`, which the job layer would ignore.
"""

from __future__ import annotations

from jobcore._jobs.kindcheck import kind_name
from jobcore._jobs.kindcheck import kind_problems


def assert_valid_kind(kind: object) -> None:
    """Fail (AssertionError) naming every problem of `kind`, unknown public attributes included."""
    if problems := kind_problems(kind, every_attribute=True):
        listed = "".join(f"\n  - {problem}" for problem in problems)
        raise AssertionError(f"{kind_name(kind)} is not a valid job kind:{listed}")
