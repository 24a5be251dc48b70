import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")
application = get_wsgi_application()

# The settings' sections are read and checked now, so a malformed value stops the web process at
# start-up rather than failing its first request (building the container makes no network call).
from emailops import container  # noqa: E402
from emailops.capabilities import UNSUBSCRIBE_LINKS, WEBHOOKS, report_off  # noqa: E402

# The console's and the API's sends emit webhook events and carry unsubscribe links.
report_off(container.current().config, WEBHOOKS, UNSUBSCRIBE_LINKS, process="web")
