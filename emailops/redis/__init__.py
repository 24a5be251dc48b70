"""Everything that talks to Redis, and the only package that imports ``redis``
(tests/test_architecture.py checks it):

- ``client``: the client factory and the translation of Redis errors into core's exceptions;
- ``rate``: the SES send-rate bucket shared by every consumer (``RedisBucketStore``);
- ``suppression``: a complete-or-not set of a table's keys (``RedisSuppressionIndex``): the erasure
  tombstones' hashes;
- ``reputation``: the guard's pauses and slowdowns (``ReputationState``, ``ReputationGate``);
- ``token_rate``: each API token's emails per minute (``TokenRateLimiter``).
"""
