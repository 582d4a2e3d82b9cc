"""Unit tests of plugins/module_utils/host/ and the host modules, one file per module (tests/unit/test_house.py)."""
