"""One liveness probe for every pid record (data-dir holder, broker file, pause channel)."""

import os
import subprocess
import sys

from memstrata.store.lock import pid_alive


def test_own_process_is_alive() -> None:
    assert pid_alive(os.getpid())


def test_no_pid_is_never_alive() -> None:
    # kill(0, 0) probes our own process group and succeeds: a record without a pid
    # (read as 0) must not look like a live holder.
    assert not pid_alive(0)
    assert not pid_alive(-1)


def test_exited_process_is_not_alive() -> None:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    assert not pid_alive(int(proc.stdout))
