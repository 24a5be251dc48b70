"""Instruments shared by the fault suite (tests/faults) and the benchmarks (bench/)."""
