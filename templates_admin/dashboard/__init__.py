"""The operations dashboard: the console's front page (the admin index) for every console role.

Charts of the hourly counters, the dead-letter depth and SES's quota; the worst messageIds and
organizations; the reputation guard's banner and pauses, with a form for Support leads to set or
lift one. It reads pre-aggregated data only (``selectors``), never the journal."""
