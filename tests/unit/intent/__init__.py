"""Unit tests of plugins/module_utils/intent/, one file per module (tests/unit/test_house.py)."""
