"""Sending reputation in the console: counters and rates (selectors), the guard's pauses
(services), the periodic evaluation (guard). See docs/reputation.md."""
