"""kafkatune's command line (cli.py and one module per command), and what it shows a person: tables,
live views, plans and summaries. It is the top of the house: nothing imports it, and it computes nothing
itself (see docs/design.md for the folders below it).
"""

from __future__ import annotations

__version__ = "0.1.0"
