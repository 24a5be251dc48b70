import pytest

from tests.preferences.fakes import MemoryPreferences, install_fakes


@pytest.fixture
def store(monkeypatch) -> MemoryPreferences:
    return install_fakes(monkeypatch, MemoryPreferences())
