"""What counts as an interrupt: a ``KeyboardInterrupt``, or the errors CPython raises in its place."""
from __future__ import annotations

import pytest

from deplbench.incumbent import is_interrupt


def _raised(make):
    try:
        make()
    except BaseException as exc:  # noqa: BLE001 - the exception itself is the value under test
        return exc
    raise AssertionError("nothing raised")


def _wrapped(outer: type[BaseException], inner: BaseException):
    def make():
        try:
            raise inner
        except BaseException as exc:
            raise outer("initialization failed") from exc
    return make


def _bare(exc: BaseException):
    def make():
        raise exc
    return make


@pytest.mark.parametrize("make, expected", [
    (_bare(KeyboardInterrupt()), True),
    (_wrapped(SystemError, KeyboardInterrupt()), True),  # a compiled call's result with an exception set
    (_wrapped(ImportError, KeyboardInterrupt()), True),  # a native module's import cut short
    (_wrapped(ImportError, ValueError("x")), False),  # a broken module, not a stop
    (_wrapped(SystemError, ZeroDivisionError()), False),
    (_wrapped(RuntimeError, KeyboardInterrupt()), False),  # a handler's own bug stays a crash
    (_bare(ImportError("no module")), False),
])
def test_is_interrupt(make, expected):
    assert is_interrupt(_raised(make)) is expected


def test_a_chain_of_compiled_calls_is_walked():
    def make():
        try:
            _wrapped(SystemError, KeyboardInterrupt())()
        except SystemError as exc:
            raise SystemError("outer") from exc
    assert is_interrupt(_raised(make))
