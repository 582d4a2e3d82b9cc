"""The lab's firmware images (mlnx-fw-updater ships them), read by
``mlxfwmanager -i``. A text file starting with
``LINERATE-LAB-FW-IMAGE`` and ``KEY=value`` lines (PSID, FW, PXE, UEFI, NAME).
"""

import os

from linerate_lab import placeholder

MAGIC = "LINERATE-LAB-FW-IMAGE"


def read(path):
    """The image's fields, or None when ``path`` is not a readable image."""
    body = placeholder.lines(path, MAGIC)
    if body is None:
        return None
    fields = dict(line.split("=", 1) for line in body if "=" in line)
    fields["path"] = path
    return fields


def candidates(path):
    """Images at ``path`` (a file or a directory of images)."""
    if os.path.isdir(path):
        found = [read(os.path.join(path, f)) for f in sorted(os.listdir(path))]
        return [i for i in found if i]
    image = read(path)
    return [image] if image else []


def version_tuple(v):
    return tuple(int(x) for x in v.split("."))
