# Django's date-format syntax; T is the zone's abbreviation (TIME_ZONE, UTC by default).
DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i:s T"  # as display.local_text writes it
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
TIME_FORMAT = "H:i"
MONTH_DAY_FORMAT = "F j"
YEAR_MONTH_FORMAT = "F Y"
FIRST_DAY_OF_WEEK = 1  # Monday
