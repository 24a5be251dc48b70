"""The send policies, one question each (emailops.core.send_policy; the order they are asked in,
and which are on, is ``emailops.pipeline_build.send_policies``, described in docs/pipeline.md)."""
