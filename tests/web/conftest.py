"""A playground server for the web tests: ``matlang serve`` on a free localhost port, in its
own process (as a person starts it), stopped after the tests. Its time limit is 10 s: the
machine the tests share may be slow, and the slow request they send takes minutes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(base: str, path: str, body: object, *, raw: bytes | None = None) -> tuple[int, dict]:
    """POST JSON (or ``raw`` bytes) and return (status, JSON), 4xx and 5xx included."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="session")
def server():
    pytest.importorskip("starlette", reason='the web extra: pip install "matlang[web]"')
    pytest.importorskip("uvicorn", reason='the web extra: pip install "matlang[web]"')
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "matlang.cli", "serve", "--port", str(port), "--timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(proc.stdout.read().decode()) from None
                time.sleep(0.2)
        # the first request waits for a worker to load matlang (outside the time limit)
        post(base, "/api/sentence", {"sentence": "tr(A^3)"})
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
