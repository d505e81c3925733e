"""The doctor step's screen and its widgets."""
