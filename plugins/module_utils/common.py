"""Shared pieces of linerate's module_utils (stdlib only)."""


class ParseError(ValueError):
    """A tool printed an error, or output that is not the format it should be.

    Parsers raise this instead of returning an empty success: a missing
    device, an unloaded driver or a permission error must stop the caller.
    """

    def __init__(self, tool, message, text=None):
        self.tool = tool
        self.text = text
        super().__init__(f"{tool}: {message}")
