"""Exceptions raised by the models layer."""

from __future__ import annotations

from pdes.errors import UserError


class TopologyError(UserError):
    """A topology, routing or machine preset was given an invalid value.

    The message names the parameter, the value given and the valid range or choices; the
    ``simhpc`` command line prints it without a traceback.
    """
