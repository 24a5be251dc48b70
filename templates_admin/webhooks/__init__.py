"""The webhooks area: endpoints (services), fan-out and delivery of webhook events (delivery),
the HTTP post (sender), the destination check's resolver (destination), the console's replays
and test events (replay), and its pages (views; ``admin_urls``/``changelist`` in ``pages``,
mounted by templates_admin.admin). Uses no other area: the journal and the jobs use it."""
