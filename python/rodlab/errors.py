"""rodlab's exceptions: the kinds of the command line's exit codes.

``InputError`` is what exits 2 on the command line (a missing file, a
misspelt field, a value out of range); ``ComputationError`` and ``IoError``
what exits 1 (no convergence, a fit that failed its checks; a disk or a
device). Their messages are the command line's, one line naming the file,
field or device.
"""


class Error(Exception):
    """Any error rodlab reports."""


class InputError(Error, ValueError):
    """The input is wrong: fix the file, field or argument the message names."""


class ComputationError(Error, RuntimeError):
    """A computation did not succeed on valid input (no convergence, a model
    outside its range, a fit that failed its checks)."""


class IoError(Error, OSError):
    """The machine failed: a file that cannot be written, a full disk, a
    device that went away."""
