"""crashlens: why did this distributed training run die?"""

from __future__ import annotations

__version__ = "0.1.0"
