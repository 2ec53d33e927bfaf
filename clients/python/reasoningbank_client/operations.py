"""The sans-IO core both clients run: every method of the API is written once,
as an *operation*, a generator that yields what it needs done (``Call``: send
one HTTP request; ``Sleep``: wait; ``Emit``: hand one value to the caller of a
stream) and gets the answer back (the ``httpx.Response``, or the transport
error thrown in). It never touches a socket or a clock's sleep itself.

``Client`` (client.py) performs operations with blocking httpx and
``time.sleep``; ``AsyncClient`` (async_client.py) with ``httpx.AsyncClient``
and ``anyio.sleep``. No event loop is ever run by the blocking client, so it
works from inside a running loop (a notebook, an async agent).

``@endpoint`` marks an operation that answers one value, ``@stream`` one that
emits many; each flavour of client turns every one of them into a method of its
own (a plain, a coroutine or an (async) generator function) with the
operation's signature and docstring, when the class is defined."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

if TYPE_CHECKING:
    from reasoningbank_client.async_client import AsyncClient

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """Send one request (path relative to the API base); the answer is the ``httpx.Response``,
    or an ``httpx.TransportError`` thrown into the operation."""

    method: str
    path: str
    json: Any = None
    params: Mapping[str, Any] | None = None
    content: bytes | None = None  # a raw body (with its Content-Type in ``headers``) instead of ``json``
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait this many seconds (the answer is None)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Emit(Generic[T]):
    """Hand ``value`` to whoever iterates a stream (the answer is None)."""

    value: T


Action = Call | Sleep
Op = Generator[Action, Any, R]  # an operation answering one R
Stream = Generator[Action | Emit[T], Any, None]  # an operation emitting Ts


def advance(op: Generator[Any, Any, Any], answer: Any, error: BaseException | None) -> Any:
    """The operation's next action after ``answer`` (or ``error``, thrown in); StopIteration at its end."""
    return op.throw(error) if error is not None else op.send(answer)


class endpoint(Generic[P, R]):  # a decorator, named like one
    """An operation answering one value: a blocking method on ``Client``, a coroutine method on
    ``AsyncClient``, with the operation's signature and docstring."""

    def __init__(self, op: Callable[Concatenate[Any, P], Op[R]]):
        self.op = op
        functools.update_wrapper(typing.cast(Any, self), op)

    def answer_type(self) -> Any:
        """R, from the operation's ``-> Op[R]``."""
        return typing.get_args(typing.get_type_hints(self.op)["return"])[-1]

    @overload
    def __get__(self, instance: None, owner: type) -> endpoint[P, R]: ...
    @overload
    def __get__(self, instance: AsyncClient, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        raise TypeError(f"{self.op.__name__} is a method of Client or AsyncClient")


class stream(Generic[P, T]):
    """An operation emitting values: an iterator on ``Client``, an async iterator on ``AsyncClient``."""

    def __init__(self, op: Callable[Concatenate[Any, P], Stream[T]]):
        self.op = op
        functools.update_wrapper(typing.cast(Any, self), op)

    def item_type(self) -> Any:
        """T, from the operation's ``-> Stream[T]``."""
        yielded = typing.get_args(typing.get_type_hints(self.op)["return"])[0]
        (emit,) = [arg for arg in typing.get_args(yielded) if typing.get_origin(arg) is Emit]
        return typing.get_args(emit)[0]

    @overload
    def __get__(self, instance: None, owner: type) -> stream[P, T]: ...
    @overload
    def __get__(self, instance: AsyncClient, owner: type) -> Callable[P, AsyncIterator[T]]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> Callable[P, Iterator[T]]: ...
    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        raise TypeError(f"{self.op.__name__} is a method of Client or AsyncClient")


def operations(cls: type) -> dict[str, endpoint | stream]:
    """Every operation ``cls`` inherits, by name."""
    found: dict[str, endpoint | stream] = {}
    for klass in reversed(cls.__mro__):
        found.update({name: value for name, value in vars(klass).items() if isinstance(value, endpoint | stream)})
    return found


def as_method(function: Any, operation: endpoint | stream, iterator: Any) -> Callable[..., Any]:
    """``function`` dressed as the operation: its name, docstring and signature, answering what the
    operation answers (an ``iterator`` of the values a stream emits: ``Iterator`` or ``AsyncIterator``)."""
    answer = iterator[operation.item_type()] if isinstance(operation, stream) else operation.answer_type()
    functools.update_wrapper(function, operation.op)
    del function.__wrapped__  # the signature below is the method's own, not the operation's
    signature = inspect.signature(operation.op, eval_str=True)
    function.__signature__ = signature.replace(return_annotation=answer)
    return function
