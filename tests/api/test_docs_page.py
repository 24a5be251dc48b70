"""The API's docs page serves the Swagger UI ninja ships, though ninja is not an installed app."""

from __future__ import annotations

from django.contrib.staticfiles import finders


def test_the_docs_page_uses_the_bundled_swagger_ui(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "cdn." not in page  # the CSP allows no third-party script
    assert finders.find("ninja/swagger-ui-bundle.js")  # and whitenoise can serve it
