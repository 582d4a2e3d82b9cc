"""Unit tests of plugins/module_utils/switch/ (tests/unit/test_house.py); the contract every driver meets."""
