"""Sending reputation in the console (stand-in until wip/reputation-guard lands; the guard owns
this package)."""
