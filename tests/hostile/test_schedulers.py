"""``--scheduler`` to an address where nothing answers, or something answers garbage: one line, exit 3, in time."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from deplbench.benchmarks.harness import runner
from deplbench.cli import main
from deplbench.errors import ENVIRONMENT_STATUS
from hostile.kit import fixtures

#: what the fake scheduler does with a connection
BEHAVIOURS = ("refused", "never-accepts", "accepts-silent", "closes", "garbage", "huge-frame", "http")


class FakeScheduler:
    """A TCP server on 127.0.0.1 that answers every connection as ``behaviour`` says, for ``life_s`` at most."""

    def __init__(self, behaviour: str, life_s: float = 30.0):
        self.behaviour, self.end = behaviour, time.monotonic() + life_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        if behaviour == "refused":  # nothing listens on the port any more
            self.sock.close()
            return
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while time.monotonic() < self.end:
            if self.behaviour == "never-accepts":
                time.sleep(0.1)
                continue
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(c)
            answer = {"closes": None, "accepts-silent": b"",
                      "garbage": bytes(range(256)) * 8,
                      "huge-frame": (1).to_bytes(8, "little") + (2**62).to_bytes(8, "little") + bytes(64),
                      "http": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"}[self.behaviour]
            try:
                if answer is None:
                    c.close()
                elif answer:
                    c.sendall(answer)
            except OSError:
                pass

    def close(self) -> None:
        self.end = 0.0
        for c in getattr(self, "conns", []):
            c.close()
        self.sock.close()


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_a_bad_scheduler_is_one_line_within_the_timeout(tmp_path, capsys, monkeypatch, behaviour):
    monkeypatch.setattr(runner, "CONNECT_TIMEOUT_S", 2.0)
    monkeypatch.setattr(runner, "CONNECT_GRACE_S", 1.0)
    files = fixtures(tmp_path)
    fake = FakeScheduler(behaviour)
    address = f"tcp://127.0.0.1:{fake.port}"
    try:
        t0 = time.monotonic()
        rc = main(["run", str(files["cfg"]), "--out", str(tmp_path / "out"), "--scheduler", address, "--quiet",
                   "--no-report"])
        took = time.monotonic() - t0
    finally:
        fake.close()
    err = capsys.readouterr().err
    assert rc == ENVIRONMENT_STATUS, err
    assert err.count("\n") == 1 and err.startswith("deplbench: error: --scheduler: " + address), err
    assert "Traceback" not in err
    assert took < 2.0 + 1.0 + 2.0, took  # the timeout, its grace, and the config's loading
    assert not (tmp_path / "out").exists()
