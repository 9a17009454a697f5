"""The service's desktop slots under a race: a waiter woken for a free slot and a newcomer that
arrives before the waiter resumes must never both think they have it, nor neither."""

from __future__ import annotations

import asyncio

import pytest

from mantis_fast.errors import ServiceBusy
from mantis_fast.service.episodes import DesktopKind
from mantis_fast.service.server import DesktopSlots

KIND = DesktopKind(None)


@pytest.mark.parametrize("yields", range(6))
def test_a_woken_waiter_keeps_the_slot_it_was_woken_for(yields: int) -> None:
    async def scenario() -> None:
        slots = DesktopSlots(1, max_queue=2)
        first = await slots.acquire(KIND, 1.0)
        waiter = asyncio.create_task(slots.acquire(KIND, 5.0))
        await asyncio.sleep(0.01)  # the waiter waits
        await slots.release(first)
        for _ in range(yields):  # the waiter's wake-up runs part of the way
            await asyncio.sleep(0)
        try:
            newcomer = await slots.acquire(KIND, 0.2)
        except (asyncio.TimeoutError, ServiceBusy):
            newcomer = None
        if newcomer is not None:  # it got the slot first: the waiter waits on, then gets it
            await asyncio.sleep(0.05)
            assert not waiter.done(), waiter.exception()  # still waiting, not failed
            await slots.release(newcomer)
        got = await asyncio.wait_for(waiter, 5.0)  # never an AssertionError in the waiter
        assert got is slots.slots[0] and got.busy
        await slots.release(got)
        assert not any(slot.busy for slot in slots.slots) and slots.waiting == 0

    asyncio.run(scenario())


def test_a_wait_cut_by_its_timeout_takes_no_slot() -> None:
    async def scenario() -> None:
        slots = DesktopSlots(1, max_queue=1)
        first = await slots.acquire(KIND, 1.0)
        with pytest.raises(asyncio.TimeoutError):
            await slots.acquire(KIND, 0.05)
        await slots.release(first)
        assert not any(slot.busy for slot in slots.slots) and slots.waiting == 0

    asyncio.run(scenario())
