"""The train step's screen and its widgets."""
