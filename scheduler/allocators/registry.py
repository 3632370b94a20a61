"""The allocator registry: names to classes.

:data:`ALLOCATORS` maps names to classes (:func:`register_allocator` adds one);
:func:`make_allocator` builds one by name and raises ``UserError`` listing the valid names for
an unknown one. Importing :mod:`scheduler.allocators` (which any import of this module does
first) registers every allocator of the package.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..errors import UserError
from .interface import Allocator

__all__ = ["ALLOCATORS", "register_allocator", "make_allocator"]


ALLOCATORS: dict[str, type[Allocator]] = {}

AllocatorClass = TypeVar("AllocatorClass", bound=type[Allocator])


def register_allocator(cls: AllocatorClass) -> AllocatorClass:
    """Class decorator: add an allocator class to :data:`ALLOCATORS` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name'")
    ALLOCATORS[cls.name] = cls
    return cls


def make_allocator(name: str, **kwargs: Any) -> Allocator:
    """Build the allocator registered as ``name`` with keyword arguments ``kwargs``."""
    try:
        cls = ALLOCATORS[name]
    except (KeyError, TypeError):
        raise UserError(f"unknown allocator {name!r}; valid: {', '.join(sorted(ALLOCATORS))}") from None
    return cls(**kwargs)
