"""An in-memory preference store for console tests (emailops.core.preferences.PreferenceStore,
plus ``history``), installed on the current container as the real one is reached:
``container.current().preference_store``."""

from __future__ import annotations

from dataclasses import replace

from emailops import container
from emailops.core.contract import address_key
from emailops.core.preferences import Preference, PreferenceChange


class FakePreferenceStore:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Preference] = {}
        self.changes: list[Preference] = []

    def get(self, address: str, category: str) -> Preference | None:
        return self.items.get((address_key(address), category))

    def of_address(self, address: str) -> list[Preference]:
        key = address_key(address)
        return [p for (a, _), p in self.items.items() if a == key]

    def set(self, preference: Preference) -> None:
        preference = replace(preference, address=address_key(preference.address))
        self.items[(preference.address, preference.category)] = preference
        self.changes.append(preference)

    def remove_address(self, address: str) -> int:
        mine = [k for k in self.items if k[0] == address_key(address)]
        for k in mine:
            del self.items[k]
        return len(mine)

    def history(self, address: str) -> list[PreferenceChange]:
        key = address_key(address)
        return [
            PreferenceChange(p.category, p.subscribed, p.how, p.at)
            for p in reversed(self.changes)
            if p.address == key
        ]


def install_fake_preferences() -> FakePreferenceStore:
    store = FakePreferenceStore()
    container.current().__dict__["preference_store"] = store
    return store
