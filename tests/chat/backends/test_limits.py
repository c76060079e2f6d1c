"""The cross-loop, cross-thread slot limiter behind every backend's concurrency limit."""

from __future__ import annotations

import asyncio
import threading
import time

from chat.backends.limits import SlotLimiter, limiter_for


def test_it_never_admits_more_than_the_limit_across_threads_and_loops() -> None:
    limiter = SlotLimiter(limit=2)
    lock = threading.Lock()
    active = peak = 0

    async def job() -> None:
        nonlocal active, peak
        async with limiter:
            with lock:
                active += 1
                peak = max(peak, active)
            await asyncio.sleep(0.02)
            with lock:
                active -= 1

    def thread_main() -> None:
        async def several() -> None:
            await asyncio.gather(*(job() for _ in range(3)))

        asyncio.run(several())

    threads = [threading.Thread(target=thread_main) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert peak == 2
    assert limiter.in_use == 0


def test_a_cancelled_waiter_gives_its_slot_back() -> None:
    limiter = SlotLimiter(limit=1)

    async def main() -> None:
        await limiter.acquire()
        waiter = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        limiter.release()
        assert limiter.in_use == 0
        await asyncio.wait_for(limiter.acquire(), 1)  # the slot is free again
        limiter.release()

    asyncio.run(main())
    assert limiter.in_use == 0


def test_a_waiter_cancelled_just_after_being_granted_passes_the_slot_on() -> None:
    limiter = SlotLimiter(limit=1)

    async def main() -> None:
        await limiter.acquire()
        first = asyncio.create_task(limiter.acquire())
        second = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.01)
        limiter.release()  # granted to `first` …
        first.cancel()  # … which is cancelled before it runs
        await asyncio.gather(first, return_exceptions=True)
        await asyncio.wait_for(second, 1)  # so `second` gets the slot
        limiter.release()

    asyncio.run(main())
    assert limiter.in_use == 0


def test_a_waiter_on_another_thread_is_woken_on_its_own_loop() -> None:
    limiter = SlotLimiter(limit=1)
    acquired = threading.Event()
    released_at: list[float] = []
    woke_at: list[float] = []

    def other() -> None:
        async def wait() -> None:
            await limiter.acquire()
            woke_at.append(time.monotonic())
            limiter.release()

        asyncio.run(wait())

    async def hold() -> None:
        await limiter.acquire()
        acquired.set()
        thread = threading.Thread(target=other)
        thread.start()
        await asyncio.sleep(0.1)
        released_at.append(time.monotonic())
        limiter.release()
        await asyncio.to_thread(thread.join, 5)

    asyncio.run(hold())
    assert woke_at and woke_at[0] >= released_at[0]


def test_an_edited_backend_gets_a_fresh_limiter() -> None:
    assert limiter_for("7:abc", 2) is limiter_for("7:abc", 2)
    assert limiter_for("7:abc", 3).limit == 3
    assert limiter_for("7:def", 3) is not limiter_for("7:abc", 3)
