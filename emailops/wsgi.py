import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")
application = get_wsgi_application()

# The settings' sections are read and checked now, so a malformed value stops the web process at
# start-up rather than failing its first request (building the container makes no network call).
from emailops import container  # noqa: E402

container.current()
