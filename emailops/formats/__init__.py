"""Date formats of the console: one everywhere, "2026-12-02 01:40 UTC" (the admin's own pages
would print "Dec. 2, 2026, 1:40 a.m." in the en locale)."""
