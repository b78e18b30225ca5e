"""Process-independent seeds from names, so that a unit's random draw depends on the unit, not on the process or
the order in which units are met. Depends on nothing in ``lib``: any layer may seed from it."""
from __future__ import annotations

import hashlib


def stable_int(text: str) -> int:
    """Process-independent integer from a string, for seeding a generator per unit (Python's hash() of a str is
    salted per process): the first 8 bytes of SHA-256 of its UTF-8, read little-endian."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
