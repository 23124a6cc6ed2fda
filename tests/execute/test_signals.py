"""One signal helper for both executors: SIGINT/SIGTERM set the stop flag, handlers are put back."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from reportgen.execute.signals import AGAIN, stop_on_signals


def test_signals_set_the_flag_and_a_second_one_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = threading.Event()
    with stop_on_signals(stop):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set()
        assert capsys.readouterr().err == ""
        os.kill(os.getpid(), signal.SIGINT)
        assert capsys.readouterr().err == AGAIN
    assert signal.getsignal(signal.SIGTERM) is before


def test_outside_the_main_thread_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGINT)
    seen: list[object] = []

    def worker() -> None:
        with stop_on_signals(threading.Event()):
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [before]
