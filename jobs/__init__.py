"""The job engine: long, audited operations (``Job``, one ``JobStep`` per item done), created by
whoever may start their kind, run (and resumed) by a Celery task with a heartbeat, orphans taken
over. The kinds are registered by the apps that offer them (the console's in
``templates_admin.apps``); the engine knows none of them."""
