"""``python -m tests.support.moto_server``: moto's server with DynamoDB's conditional writes atomic
(see moto_atomic). Its request threads otherwise let two consumers both claim one email (seen:
the e2e duplicate request sent twice under load), which real DynamoDB never allows."""

from __future__ import annotations

import sys

from moto.server import main

from tests.support.moto_atomic import atomic_dynamodb_writes

if __name__ == "__main__":
    with atomic_dynamodb_writes():
        main(sys.argv[1:])
