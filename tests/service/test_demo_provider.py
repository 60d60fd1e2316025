"""The demo's provider: it answers only the credential the gateway holds for it, stably, and
breaks its contract for one city on purpose."""

from __future__ import annotations

from starlette.testclient import TestClient

from adjudge.service import skycast_app


def test_the_demo_provider_takes_only_its_credential() -> None:
    client = TestClient(skycast_app("s3cret"))
    assert client.get("/v1/forecast/berlin").status_code == 401
    assert client.get("/v1/forecast/berlin", headers={"X-Api-Key": "wrong"}).status_code == 401
    ok = client.get("/v1/forecast/berlin?days=2", headers={"X-Api-Key": "s3cret"})
    assert ok.status_code == 200
    body = ok.json()
    assert (body["latitude"], len(body["daily"])) == (52.52, 2)
    again = client.get("/v1/forecast/berlin?days=2", headers={"X-Api-Key": "s3cret"}).json()
    assert again["daily"] == body["daily"]


def test_atlantis_breaks_the_contract_on_purpose() -> None:
    client = TestClient(skycast_app("k"))
    body = client.get("/v1/forecast/atlantis", headers={"X-Api-Key": "k"}).json()
    assert body["latitude"] == 95.0 and body["daily"][0]["temperature_2m_max"] == 300.0
    assert client.get("/v1/forecast/x?days=99", headers={"X-Api-Key": "k"}).json()["daily"]
