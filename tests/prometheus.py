"""Prometheus for tests: `responses` answers /api/v1/query from the DCGM fixtures, with the
series of the nodes each query selects, as Prometheus itself would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs

import requests
import responses

DCGM = Path(__file__).parent / "fixtures" / "dcgm" / "seven-states"
AT = 1796043120.0  # 2026-11-30T12:52:00Z: when the fixture's queries were evaluated
URL = "http://127.0.0.1:9090"
QUERY_URL = f"{URL}/api/v1/query"
_FILE_FOR = {"DCGM_FI_DEV_GPU_UTIL": "utilisation", "DCGM_FI_DEV_FB_USED": "memory-used",
             "DCGM_FI_DEV_FB_FREE": "memory-free", "DCGM_FI_DEV_GPU_TEMP": "temperature",
             "DCGM_FI_DEV_XID_ERRORS": "xid", "DCGM_FI_DEV_ECC_DBE": "ecc"}


def fixture_answer(query: str) -> dict[str, object]:
    """The fixture's answer for the query's metric, only the series of the nodes it selects."""
    name = next(file for prefix, file in _FILE_FOR.items() if prefix in query)
    document: dict[str, object] = json.loads((DCGM / f"{name}.json").read_text())
    nodes = query.split('Hostname=~"')[1].split('"')[0].replace("\\\\", "\\")
    wanted = {part.replace("\\", "") for part in nodes.split("|")}
    data = document["data"]
    assert isinstance(data, dict)
    data["result"] = [s for s in data["result"] if s["metric"]["Hostname"] in wanted]
    return document


def answer_query(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
    form = parse_qs(str(request.body))
    return 200, {"Content-Type": "application/json"}, json.dumps(
        fixture_answer(form["query"][0]))


@contextmanager
def seven_states_prometheus() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.POST, QUERY_URL, callback=answer_query)
        yield mock


def sent_queries(mock: responses.RequestsMock) -> list[dict[str, list[str]]]:
    return [parse_qs(str(call.request.body)) for call in mock.calls]
