"""The lab's placeholder files: a kernel module's ``.ko`` (kmods.py) and a firmware image (tools/fwimage.py)
are text whose first line is a marker, then ``KEY=value`` lines."""


def lines(path, magic):
    """The lines after the marker of the placeholder ``path`` (its text starts with ``magic``), or None
    where ``path`` cannot be read as text or is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith(magic):
        return None
    return text.splitlines()[1:]
