"""The error type for bad input (a missing file, a malformed export or net), shared by the
reference's modules: ``chessformer.py`` prints it as one line and exits with code 2."""


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""
