"""The playground's JSON API over HTTP: answers, the command line's messages, and bounds that
keep every request from hanging or crashing the server."""

from __future__ import annotations

import json
import urllib.request

from tests.web.conftest import post


def test_sentence_level_witness_plan_and_values(server):
    status, j = post(
        server,
        "/api/sentence",
        {
            "sentence": "1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏",
            "builtin": ["K4"],
            "graphs": "0-1 1-2 2-0\nEwCW",
        },
    )
    assert status == 200 and j["ok"]
    c = j["classify"]
    assert c["fragment"] == "L2" and c["syntactic_fragment"] == "L3"
    assert c["wl"].startswith("beyond 1-WL (witness)")
    assert c["witness"]["values"] == [0, 6]
    assert j["drawing"].startswith("<svg") and 'id="nodes-1"' in j["drawing"]
    assert "readout" in j["plan"]
    assert [v["graph"] for v in j["values"]] == ["K4", "0-1 1-2 2-0", "EwCW"]
    assert j["values"][0]["value"] == 12 and j["values"][0]["flops"] > 0


def test_syntax_error_has_the_caret_and_did_you_mean(server):
    status, j = post(server, "/api/sentence", {"sentence": "trace(A)"})
    assert status == 400 and not j["ok"]
    e = j["error"]
    assert e["at"] == "1:1" and e["hint"] == "did you mean 'tr'?"
    assert "  trace(A)\n  ^^^^^^^^" in e["text"]


def test_pattern_certificate(server):
    status, j = post(server, "/api/pattern", {"pattern": "K4"})
    assert status == 200 and j["fragment"] == "none"
    assert j["witness"]["pair"] == ["rook4x4", "shrikhande"]
    assert "rook4x4: 8" in j["drawing"]


def test_bad_and_oversized_input_are_4xx(server):
    assert post(server, "/api/sentence", None, raw=b"{not json")[0] == 400
    assert post(server, "/api/sentence", [1, 2])[0] == 400
    assert post(server, "/api/sentence", {"sentence": 3})[0] == 400
    assert post(server, "/api/sentence", {"sentence": "A" * 3000})[0] == 413
    assert post(server, "/api/sentence", None, raw=b" " * 70_000)[0] == 413
    status, j = post(server, "/api/sentence", {"sentence": "tr(A)", "graphs": "0-1 1-500"})
    assert status == 413 and "at most 200 nodes" in j["error"]["message"]
    status, j = post(server, "/api/sentence", {"sentence": "tr(A)", "graphs": "/etc/passwd"})
    assert status == 400  # a graph, never a file
    assert post(server, "/api/pattern", {"pattern": "K9"})[0] == 413
    assert post(server, "/api/nothing", {})[0] == 404


def test_a_slow_request_hits_the_time_limit_and_the_server_goes_on(server):
    status, j = post(
        server, "/api/sentence", {"sentence": "tr(A^300)", "builtin": ["K200"], "witness": False}
    )
    assert status == 422 and j["error"]["kind"] == "time limit"
    with urllib.request.urlopen(server + "/api/health") as r:
        assert json.loads(r.read())["recycled"] >= 1
    status, j = post(server, "/api/sentence", {"sentence": "tr(A^3) / 6", "builtin": ["K4"]})
    assert status == 200 and j["values"][0]["value"] == 4


def test_page_and_graphs(server):
    with urllib.request.urlopen(server + "/") as r:
        page = r.read().decode()
    assert "matlang playground" in page and 'id="sentence"' in page
    with urllib.request.urlopen(server + "/api/graphs") as r:
        j = json.loads(r.read())
    assert "petersen" in j["builtin"] and j["limits"]["nodes"] == 200
