"""``Client`` and ``AsyncClient`` are one API in two flavours: the same public
methods with the same parameters and answers (the async ones awaitable), and the
blocking client keeps working when called from inside a running event loop (a
notebook, an async agent calling the sync client)."""

import asyncio
import inspect
import typing
from collections.abc import AsyncIterator, Iterator

import pytest

import reasoningbank_client as rb
from reasoningbank_client import AsyncClient, AsyncRun, Client, Run
from tests.clients.conftest import FAST_RETRY
from tests.clients.test_retries import QUICK, TOKEN_ANSWER, UNAVAILABLE, Scripted

# The few names that differ by flavour, sync → async.
RENAMED = {"close": "aclose"}


def public_methods(cls) -> dict[str, typing.Any]:
    names = [name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))]
    return {name: getattr(cls, name) for name in names}


def async_annotation(annotation):
    """What an async method answers where the sync one answers ``annotation``."""
    if typing.get_origin(annotation) is Iterator:
        return AsyncIterator[typing.get_args(annotation)]
    return {Run: AsyncRun, Client: AsyncClient}.get(annotation, annotation)


@pytest.mark.parametrize(
    ("sync_cls", "async_cls", "blocking"),
    [
        # The constructor, and run() which hands back an async context manager, answer at once.
        (Client, AsyncClient, {"__init__", "run"}),
        (Run, AsyncRun, {"step"}),  # step() only collects
    ],
)
def test_both_flavours_have_the_same_methods_and_signatures(sync_cls, async_cls, blocking):
    sync_methods, async_methods = public_methods(sync_cls), public_methods(async_cls)
    if "__init__" in blocking:
        sync_methods["__init__"], async_methods["__init__"] = sync_cls.__init__, async_cls.__init__
    assert sorted(RENAMED.get(name, name) for name in sync_methods) == sorted(async_methods)
    for name, sync_method in sync_methods.items():
        async_method = async_methods[RENAMED.get(name, name)]
        sync_sig = inspect.signature(sync_method, eval_str=True)
        async_sig = inspect.signature(async_method, eval_str=True)
        assert list(sync_sig.parameters.values()) == list(async_sig.parameters.values()), name
        assert async_annotation(sync_sig.return_annotation) == async_sig.return_annotation, name
        assert not inspect.iscoroutinefunction(sync_method) and not inspect.isasyncgenfunction(sync_method), name
        answers_later = inspect.iscoroutinefunction(async_method) or inspect.isasyncgenfunction(async_method)
        assert answers_later != (name in blocking), name


@pytest.mark.django_db(transaction=True)
def test_the_blocking_client_works_inside_a_running_event_loop(client, cable_lesson):
    async def agent():
        # An async program (a notebook cell, an agent loop) calling the blocking client directly.
        asyncio.get_running_loop()
        info = client.token()
        found = client.retrieve("Buy the cheapest USB-C cable and use the coupon", k=3)
        titles = [item.title for item in client.memories(page_size=1)]
        with client.run("Buy a cable", task_id="in-a-loop") as run:
            run.step(action="search('usb-c')")
            run.outcome = "success"
        return info, found, titles, run

    info, found, titles, run = asyncio.run(agent())
    assert info.bank == "web-agents"
    assert [item.id for item in found.items] == [str(cable_lesson.public_id)]
    assert titles == [cable_lesson.title]
    assert run.recorded.status == "received" and run.retrieval_id


def test_the_blocking_client_retries_inside_a_running_event_loop():
    async def agent(url):
        with Client(url, "rb_t", retry=QUICK) as client:
            return client.token()

    with Scripted(UNAVAILABLE, (200, {}, TOKEN_ANSWER)) as server:
        info = asyncio.run(agent(server.url))
    assert info.team == "t" and len(server.requests) == 2


def test_both_flavours_raise_the_same_typed_error():
    async def both(url):
        with Client(url, "rb_t", retry=FAST_RETRY) as client, pytest.raises(rb.ServerError) as sync_error:
            client.token()
        async with AsyncClient(url, "rb_t", retry=FAST_RETRY) as aclient:
            with pytest.raises(rb.ServerError) as async_error:
                await aclient.token()
        return sync_error.value, async_error.value

    with Scripted(UNAVAILABLE) as server:
        sync_error, async_error = asyncio.run(both(server.url))
    assert (sync_error.status, sync_error.code, str(sync_error)) == (
        async_error.status,
        async_error.code,
        str(async_error),
    )
    assert len(server.requests) == 2 * FAST_RETRY.max_attempts
