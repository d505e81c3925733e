"""The parity step's screen and its widgets."""
