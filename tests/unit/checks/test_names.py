"""checks/names.py: names in natural order (the report's tables, the accounting's cases)."""

import re

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.checks.names import natural_key


@pytest.mark.parametrize("names", [["swp10", "swp2", "swp1"], ["Ethernet16", "Ethernet8", "Ethernet0"], ["mlx5_10", "mlx5_2"], ["node10", "node9"]])
def test_natural_key_orders_names_as_a_person_does(names):
    got = sorted(names, key=natural_key)
    assert got == sorted(names, key=lambda s: (re.sub(r"\d+", "", s), int(re.findall(r"\d+", s)[-1])))
    assert got != sorted(names)


def test_every_run_of_digits_compares_as_a_number_and_a_non_string_as_its_text():
    assert natural_key("swp1s10") == ["swp", 1, "s", 10, ""]
    assert sorted(["swp1s10", "swp1s2", "swp10s1"], key=natural_key) == ["swp1s2", "swp1s10", "swp10s1"]
    assert natural_key(7) == ["", 7, ""] and natural_key(None) == ["None"]
