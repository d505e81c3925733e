"""Step 1: probes, parsers, compatibility matrix and checks for the environment."""

