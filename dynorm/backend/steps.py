"""Steps and their drivers: every request dynorm plans is a :class:`Send` in a generator of steps.

A planner yields :class:`Send`, :class:`Sleep` and :class:`Emit` steps; one synchronous driver
(:func:`stream`/:func:`drive`, through :func:`~dynorm.backend.calls.call`) and one asyncio driver
(:func:`astream`/:func:`adrive`, through :func:`~dynorm.backend.calls.acall`) run them, so each
decision is written once for both APIs. Before an entity's first request in a run, the drivers
run the send guard (:func:`set_send_guard`).
"""

from __future__ import annotations

import time
from typing import Any, AsyncGenerator, Callable, Generator

from .._value import Value
from ..exceptions import DynormError
from .calls import acall, call
from .records import Stats

__all__ = ["Send", "SendAll", "Sleep", "Emit",
           "Steps", "SendGuard", "set_send_guard", "stream", "drive", "astream", "adrive",
           "collect", "first_emit"]


class Send(Value):
    """A step asking its driver to send one request (:func:`call` or :func:`acall`); the driver
    sends the response back into the steps, or throws the dynorm error in.

    Attributes:
        operation, params: the request.
        stats: a :class:`Stats` to add its figures to.
        entities: the entity classes the request is for (an entity's reads and writes name theirs;
            raw and migration requests none). Before the first request of an entity in a run of
            steps, the driver runs the send guard (:func:`set_send_guard`: the key-version check of
            :mod:`dynorm.keyguard`).
    """

    operation: str
    params: dict[str, Any]
    stats: Stats | None
    entities: tuple[Any, ...]

    def __init__(self, operation: str, params: dict[str, Any], stats: Stats | None = None,
                 entities: tuple[Any, ...] = ()) -> None:
        self.operation = operation
        self.params = params
        self.stats = stats
        self.entities = entities


class SendAll(Value):
    """A step asking its driver to send several requests at once and send back the list of responses.

    The synchronous driver sends them from a thread pool, the asyncio driver with
    ``asyncio.gather``; the responses come back in the order of ``sends``. When any fails, the
    first error (in that order) is thrown in, after every request has finished. Used by the
    fan-out over the buckets of a write-sharded index (:mod:`dynorm.shard_merge`).
    """

    sends: list[Send]

    def __init__(self, sends: list[Send]) -> None:
        self.sends = sends


class Sleep(Value):
    """A step asking its driver to wait ``seconds`` (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Emit(Value):
    """A step handing a value out of a streaming run (:func:`stream`, :func:`astream`)."""

    value: Any

    def __init__(self, value: Any) -> None:
        self.value = value


#: A generator of :class:`Send`/:class:`Sleep`/:class:`Emit` steps; its return value is the result.
Steps = Generator[Any, Any, Any]

#: ``guard(send, passed) -> steps | None``: what must run before ``send`` (see :func:`set_send_guard`)
SendGuard = Callable[[Send, "set[Any]"], "Steps | None"]
_send_guard: SendGuard | None = None


def set_send_guard(guard: SendGuard | None) -> None:
    """Install the check both drivers run before a :class:`Send` that names entities (``None``: none).

    ``guard(send, passed)`` returns ``None`` when the request may go, or steps to run first (their
    requests are sent and recorded like any other; an error they raise ends the run, the request
    unsent). ``passed`` is a set the guard may fill, one per run of steps. :mod:`dynorm.keyguard`
    installs the key-version check when dynorm is imported.
    """
    global _send_guard
    _send_guard = guard


def _advance(steps: Steps, value: Any, error: BaseException | None) -> Any:
    return steps.send(value) if error is None else steps.throw(error)


def stream(steps: Steps, sleep: Callable[[float], Any] = time.sleep) -> Generator[Any, None, Any]:
    """Run ``steps`` synchronously (blocking I/O through :func:`call`), yielding each :class:`Emit` value.

    The one synchronous driver: :func:`drive` runs it for a result. Its return value (the
    ``StopIteration`` value) is the steps' result; closing it sends nothing more.

    Args:
        steps: the generator of steps.
        sleep: how a :class:`Sleep` step waits (injectable for tests).

    Raises:
        TypeError: a step that is not a :class:`Send`, :class:`Sleep` or :class:`Emit`.
    """
    value: Any = None
    error: BaseException | None = None
    passed: set[Any] = set()  # entities the send guard has let through in this run
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, Send):
                if step.entities and _send_guard is not None:
                    first = _send_guard(step, passed)
                    if first is not None:
                        drive(first, sleep)  # its error ends the run: the request is not sent
                try:
                    value = call(step.operation, step.params, stats=step.stats)
                except DynormError as exc:
                    error = exc
            elif isinstance(step, SendAll):
                for one in step.sends:
                    if one.entities and _send_guard is not None:
                        first = _send_guard(one, passed)
                        if first is not None:
                            drive(first, sleep)
                value, error = _send_all(step.sends)
            elif isinstance(step, Sleep):
                sleep(step.seconds)
            elif isinstance(step, Emit):
                yield step.value
            else:
                raise TypeError(f"unexpected step {step!r}")
    finally:
        steps.close()


def _send_all(sends: list[Send]) -> tuple[Any, BaseException | None]:
    """Send ``sends`` concurrently from threads, each in a copy of the caller's context (settings).

    Each thread records into a :class:`Stats` of its own, added to the step's after every request
    has finished: a queryset's ``stats`` is never written from two threads at once.
    """
    own = [Stats() for _ in sends]

    def one(i: int) -> Any:
        try:
            return call(sends[i].operation, sends[i].params, stats=own[i])
        except DynormError as exc:
            return exc

    try:
        if len(sends) == 1:
            return _outcome([one(0)])
        return _outcome(_in_threads(one, len(sends)))
    finally:
        for send, part in zip(sends, own):
            if send.stats is not None:
                for name in ("requests", "items", "scanned", "read_capacity", "write_capacity"):
                    setattr(send.stats, name, getattr(send.stats, name) + getattr(part, name))


def _in_threads(one: Any, n: int, workers: int = 16) -> list[Any]:
    """``[one(0), ..., one(n - 1)]``, run from up to ``workers`` daemon threads, each call in a copy of
    the caller's context (settings).

    The caller waits in short slices, so a Ctrl-C (KeyboardInterrupt) surfaces at once even while a
    request hangs; the threads are daemons, so a hung request never holds the process's exit
    (a ThreadPoolExecutor joins its threads on leaving its block and at exit). An exception other
    than ``DynormError`` (which ``one`` returns) raised in a thread is raised here.
    """
    import contextvars
    import threading

    results: list[Any] = [None] * n
    failures: list[BaseException] = []
    next_index = iter(range(n))
    lock = threading.Lock()
    finished = threading.Semaphore(0)

    def work(context: contextvars.Context) -> None:
        while True:
            with lock:
                i = next(next_index, None)
            if i is None:
                return
            try:
                results[i] = context.copy().run(one, i)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                failures.append(exc)
            finally:
                finished.release()

    context = contextvars.copy_context()
    for _ in range(min(n, workers)):
        threading.Thread(target=work, args=(context,), daemon=True, name="dynorm-fanout").start()
    for _ in range(n):
        while not finished.acquire(timeout=0.1):
            pass
    if failures:
        raise failures[0]
    return results


def _outcome(results: list[Any]) -> tuple[Any, BaseException | None]:
    """``(responses, None)``, or ``(None, the first error)`` (a non-dynorm error is raised as is)."""
    for r in results:
        if isinstance(r, DynormError):
            return None, r
        if isinstance(r, BaseException):
            raise r
    return results, None


def drive(steps: Steps, sleep: Callable[[float], Any] = time.sleep) -> Any:
    """Run ``steps`` synchronously (blocking I/O through :func:`call`) and return their result.

    Args:
        steps: the generator of steps; it emits nothing.
        sleep: how a :class:`Sleep` step waits (injectable for tests).

    Raises:
        TypeError: the steps emitted a value (they are to be run with :func:`stream`).
    """
    run = stream(steps, sleep)
    try:
        emitted = next(run)
    except StopIteration as stop:
        return stop.value
    run.close()
    raise TypeError(f"drive(): unexpected step Emit({emitted!r})")


async def astream(steps: Steps, result: list[Any] | None = None) -> AsyncGenerator[Any, None]:
    """Run ``steps`` on the running event loop (requests through :func:`acall`), yielding each
    :class:`Emit` value.

    The one asyncio driver: :func:`adrive` runs it for a result. Closing it (``aclose()``, a
    cancelled task) sends nothing more.

    Args:
        steps: the generator of steps.
        result: when given, the steps' result is appended to it at the end.

    Raises:
        TypeError: a step that is not a :class:`Send`, :class:`Sleep` or :class:`Emit`.
    """
    import asyncio

    value: Any = None
    error: BaseException | None = None
    passed: set[Any] = set()  # entities the send guard has let through in this run
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration as stop:
                if result is not None:
                    result.append(stop.value)
                return
            value, error = None, None
            if isinstance(step, Send):
                if step.entities and _send_guard is not None:
                    first = _send_guard(step, passed)
                    if first is not None:
                        await adrive(first)  # its error ends the run: the request is not sent
                try:
                    value = await acall(step.operation, step.params, stats=step.stats)
                except DynormError as exc:
                    error = exc
            elif isinstance(step, SendAll):
                for one in step.sends:
                    if one.entities and _send_guard is not None:
                        first = _send_guard(one, passed)
                        if first is not None:
                            await adrive(first)
                outcomes = await asyncio.gather(*(acall(one.operation, one.params, stats=one.stats)
                                                  for one in step.sends), return_exceptions=True)
                value, error = _outcome(list(outcomes))
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Emit):
                yield step.value
            else:
                raise TypeError(f"unexpected step {step!r}")
    finally:
        steps.close()


async def adrive(steps: Steps) -> Any:
    """Run ``steps`` on the running event loop (requests through :func:`acall`) and return their result.

    Raises:
        TypeError: the steps emitted a value (they are to be run with :func:`astream`).
    """
    result: list[Any] = []
    run = astream(steps, result)
    async for emitted in run:
        await run.aclose()
        raise TypeError(f"adrive(): unexpected step Emit({emitted!r})")
    return result[0]


def collect(steps: Steps) -> Steps:
    """Run ``steps`` inside other steps, gathering their :class:`Emit` values: ``out = yield from collect(s)``.

    :class:`Send` and :class:`Sleep` steps pass through to the outer driver (and its answers
    and errors back in).
    """
    out: list[Any] = []
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration:
                return out
            value, error = None, None
            if isinstance(step, Emit):
                out.append(step.value)
                continue
            try:
                value = yield step
            except Exception as exc:  # noqa: BLE001 - handed on to the inner steps
                error = exc
    finally:
        steps.close()


def first_emit(steps: Steps, default: Any = None) -> Steps:
    """Run ``steps`` inside other steps up to their first :class:`Emit`, then close them (no further request).

    Returns:
        the first emitted value, or ``default`` when they emit none.
    """
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration:
                return default
            value, error = None, None
            if isinstance(step, Emit):
                return step.value
            try:
                value = yield step
            except Exception as exc:  # noqa: BLE001 - handed on to the inner steps
                error = exc
    finally:
        steps.close()
