"""Exception and warning types raised by winrate."""


class WinrateInputError(ValueError):
    """Bad user input: the message names the column and the first offending rows."""


class WinrateWarning(UserWarning):
    """A result is computable but less trustworthy than it looks; the message says why."""
