"""Names in the order a person expects: node2 before node10, swp2 before swp10. Stdlib only."""

import re


def natural_key(s):
    """Sort key of a name in natural order: swp2 before swp10, Ethernet8 before Ethernet16, mlx5_2 before
    mlx5_10, node9 before node10 (the digits compare as numbers; what a person expects a port list to be)."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", str(s))]
