"""Simulated node tools, one module per program, each with ``main(argv) -> int``.

Each printer follows one real version's format, named in its docstring.
"""
