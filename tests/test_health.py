"""/healthz answers probes that come by IP over plain http, where everything else is refused."""

from __future__ import annotations

import pytest


@pytest.fixture
def production_http(settings):
    settings.ALLOWED_HOSTS = ["console.example.org"]
    settings.SECURE_SSL_REDIRECT = True


def test_healthz_answers_a_probe_by_ip_over_http(client, production_http):
    # No django_db mark: pytest-django makes any database access here an error.
    response = client.get("/healthz", HTTP_HOST="10.0.3.17:8000")
    assert response.status_code == 200
    assert response.content == b"ok\n"


def test_other_paths_keep_the_host_check_and_the_https_redirect(client, production_http):
    assert client.get("/admin/", HTTP_HOST="10.0.3.17:8000").status_code == 400
    response = client.get("/admin/", HTTP_HOST="console.example.org")
    assert response.status_code == 301
    assert response["Location"] == "https://console.example.org/admin/"


def test_only_reads_are_answered(client, production_http):
    assert client.post("/healthz", HTTP_HOST="10.0.3.17:8000").status_code == 400
