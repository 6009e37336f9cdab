"""Length conversions."""

# Metres per unit.
METRES = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "in": 0.0254,
    "ft": 0.3048,
    "mi": 1609.344,
}


def convert(value: float, source: str, target: str) -> float:
    """`value` in unit `source` expressed in unit `target`."""
    try:
        return value * METRES[source] / METRES[target]
    except KeyError as e:
        raise ValueError(f"unknown length unit {e.args[0]!r}") from None
