"""Errors that the CLI turns into one clear line and exit code 2 (never a traceback)."""


class UserError(Exception):
    """Bad input from the user: a missing file, a malformed config, an unknown option value.

    The message is shown as is, on one line, and the CLI exits with code 2.
    """
