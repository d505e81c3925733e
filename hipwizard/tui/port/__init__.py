"""The port step's screen and its widgets."""
