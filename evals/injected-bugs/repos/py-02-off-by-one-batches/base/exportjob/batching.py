"""Splitting work into batches."""

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def batch_count(total: int, size: int) -> int:
    """How many batches of `size` hold `total` items."""
    if size <= 0:
        raise ValueError("size must be positive")
    return -(-total // size)


def nth_batch(items: Sequence[T], size: int, index: int) -> Sequence[T]:
    """Batch number `index` (from 0) of `items` in batches of `size`."""
    if size <= 0:
        raise ValueError("size must be positive")
    return items[index * size : (index + 1) * size]
