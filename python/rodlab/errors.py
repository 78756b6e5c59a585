"""rodlab's exceptions: the kinds of the command line's exit codes.

``InputError`` is what exits 2 on the command line (a missing file, a
misspelt field, a value out of range); ``ComputationError`` and ``IoError``
what exits 1 (no convergence, a fit that failed its checks; a disk or a
device). Their messages are the command line's, one line naming the file,
field or device.
"""


from typing import Any, Dict, Optional


class Error(Exception):
    """Any error rodlab reports."""


class InputError(Error, ValueError):
    """The input is wrong: fix the file, field or argument the message names."""


class ComputationError(Error, RuntimeError):
    """A computation did not succeed on valid input (no convergence, a model
    outside its range, a fit that failed its checks).

    ``result``: what the failed work still found, or None. A failed
    ``identify`` gives a dictionary: ``values`` and ``intervals`` (e_pa,
    g_pa, rho_kg_m3), ``chi_square``, ``dof``, ``p``, ``rms_error_mm``,
    ``residual_scale``, ``worst`` (the experiments that fit worst, with
    their RMS error in mm), ``reason``, and ``suggestion``: the term that
    fits the same data, fitted to them (``term``, ``keyword`` of
    ``identify``, ``flag`` of the command line, ``chi_square``, ``dof``,
    ``passed``), or None.
    """

    result: Optional[Dict[str, Any]] = None


class IoError(Error, OSError):
    """The machine failed: a file that cannot be written, a full disk, a
    device that went away."""
