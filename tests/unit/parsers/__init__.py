"""Unit tests of plugins/module_utils/parsers/, one file per module (tests/unit/test_house.py)."""
