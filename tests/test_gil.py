"""gil.quick_gil_handoff: the interval is short inside, the caller's comes back after the last use."""
import sys
import threading

import pytest

from tefuse import gil


@pytest.fixture
def interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_shortened_within_and_restored(interval):
    with gil.quick_gil_handoff():
        assert sys.getswitchinterval() == pytest.approx(gil.BUILD_SWITCH_INTERVAL)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_nested_and_concurrent_uses_restore_once(interval):
    inside, leave = threading.Event(), threading.Event()

    def other():
        with gil.quick_gil_handoff():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with gil.quick_gil_handoff():
        with gil.quick_gil_handoff():
            pass
        assert sys.getswitchinterval() == pytest.approx(gil.BUILD_SWITCH_INTERVAL)
    # the other thread's build still runs: its interval stays short
    assert sys.getswitchinterval() == pytest.approx(gil.BUILD_SWITCH_INTERVAL)
    leave.set()
    t.join(5)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_never_lengthens(interval):
    sys.setswitchinterval(gil.BUILD_SWITCH_INTERVAL / 2)
    with gil.quick_gil_handoff():
        assert sys.getswitchinterval() == pytest.approx(gil.BUILD_SWITCH_INTERVAL / 2, abs=2e-6)
    assert sys.getswitchinterval() == pytest.approx(gil.BUILD_SWITCH_INTERVAL / 2, abs=2e-6)


def test_restored_after_an_error(interval):
    with pytest.raises(ValueError):
        with gil.quick_gil_handoff():
            raise ValueError("a build that fails")
    assert sys.getswitchinterval() == pytest.approx(0.005)
