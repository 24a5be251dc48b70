import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_superuser_sees_console_entries(login, make_user, live_server, aws):
    page = login(make_user(superuser=True))
    assert page.locator("text=Template mappings").count() >= 1
    assert page.locator("text=Email journal").count() >= 1
