"""The public side of recipient preferences: the one-click unsubscribe endpoint and its page
(``/u/<token>``), outside the console: no login, no cookies, the encrypted token is the
credential."""
