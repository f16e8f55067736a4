"""The in-process moving window behind the default ``memory://`` rate-limit storage."""

from __future__ import annotations

from seojobs.api.ratelimit import MemoryWindows


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_counts_up_to_the_limit_then_refuses_without_counting() -> None:
    clock = Clock()
    windows = MemoryWindows(clock)
    answers = []
    for _ in range(3):
        answers.append(windows.hit("u1", 3, 60))
        clock.now += 10
    assert [a[:2] for a in answers] == [(True, 2), (True, 1), (True, 0)]
    assert answers[0][2] == 1_060.0  # the first request leaves the window at t0 + 60
    refused = windows.hit("u1", 3, 60)
    assert refused == (False, 0, 1_060.0)
    assert windows.remaining("u1", 3, 60) == 0
    # A refused request is not counted: once the oldest leaves, exactly one slot frees.
    clock.now = 1_060.0
    assert windows.hit("u1", 3, 60) == (True, 0, 1_070.0)
    assert windows.hit("u1", 3, 60)[0] is False


def test_stats_look_without_counting() -> None:
    clock = Clock()
    windows = MemoryWindows(clock)
    assert windows.stats("u1", 2, 60) == (2, 1_060.0)  # nothing counted: a full window
    windows.hit("u1", 2, 60)
    clock.now += 5
    for _ in range(3):
        assert windows.stats("u1", 2, 60) == (1, 1_060.0)
    windows.hit("u1", 2, 60)
    assert windows.stats("u1", 2, 60) == (0, 1_060.0)
    clock.now = 1_060.0
    assert windows.stats("u1", 2, 60) == (1, 1_065.0)


def test_windows_are_per_key_and_move() -> None:
    clock = Clock()
    windows = MemoryWindows(clock)
    assert windows.hit("u1", 1, 60)[0] is True
    assert windows.hit("u2", 1, 60)[0] is True  # another user has a budget of their own
    assert windows.hit("u1", 1, 60)[0] is False
    clock.now += 60.5
    assert windows.remaining("u1", 1, 60) == 1
    assert windows.hit("u1", 1, 60)[:2] == (True, 0)


def test_quiet_keys_are_swept() -> None:
    clock = Clock()
    windows = MemoryWindows(clock, sweep_every=5)
    windows.hit("gone", 10, 60)
    clock.now += 2 * 86_400
    for _ in range(5):
        windows.hit("busy", 10, 60)
    assert "gone" not in windows._hits and "busy" in windows._hits
