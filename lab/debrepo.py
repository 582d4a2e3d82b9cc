"""A Debian binary package and a flat apt repository, written without dpkg-dev.

``Package(...).build(out_dir)`` writes a root-owned ``.deb`` with ``dpkg-deb --build
--root-owner-group`` (control fields, files, maintainer scripts); ``write_index(out_dir)``
writes the ``Packages``, ``Packages.gz`` and ``Release`` of a flat repository (``./``) over the
``.deb`` files there. What the lab's repository holds is lab/packages.py.
"""

import gzip
import hashlib
import io
import os
import subprocess
import tempfile
import time

# the default maintainer: most of the lab's repository is Mellanox's OFED (lab/packages.py)
MAINTAINER = "Mellanox Technologies <support@mellanox.com>"
ARCH = "amd64"


class Package:
    """One binary package: control fields, files and maintainer scripts."""

    def __init__(self, name, version, description, depends=(), files=None, scripts=None, maintainer=MAINTAINER, section="net", extra=None):
        self.name = name
        self.version = version
        self.description = description
        self.depends = list(depends)
        self.files = files or {}  # path -> (mode, text)
        self.scripts = scripts or {}  # preinst/postinst/prerm/postrm -> text
        self.maintainer = maintainer
        self.section = section
        self.extra = extra or {}

    @property
    def filename(self):
        version = self.version.split(":", 1)[-1]
        return f"{self.name}_{version}_{ARCH}.deb"

    def control(self, installed_size):
        lines = [
            f"Package: {self.name}",
            f"Version: {self.version}",
            f"Architecture: {ARCH}",
            f"Maintainer: {self.maintainer}",
            f"Installed-Size: {installed_size}",
        ]
        if self.depends:
            lines.append("Depends: " + ", ".join(self.depends))
        for key, value in self.extra.items():
            lines.append(f"{key}: {value}")
        lines += [f"Section: {self.section}", "Priority: optional"]
        summary, _, body = self.description.partition("\n")
        lines.append(f"Description: {summary}")
        for para in body.strip().splitlines():
            lines.append(" " + (para if para.strip() else "."))
        return "\n".join(lines) + "\n"

    def build(self, out_dir):
        """dpkg-deb --build a root-owned package into ``out_dir``."""
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "root")
            size = 0
            for path, (mode, text) in sorted(self.files.items()):
                dest = os.path.join(root, path.lstrip("/"))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                os.chmod(os.path.dirname(dest), 0o755)
                data = text.encode()
                with open(dest, "wb") as f:
                    f.write(data)
                os.chmod(dest, mode)
                size += len(data)
            debian = os.path.join(root, "DEBIAN")
            os.makedirs(debian, exist_ok=True)
            for name, text in self.scripts.items():
                p = os.path.join(debian, name)
                with open(p, "w", encoding="utf-8") as f:
                    f.write(text)
                os.chmod(p, 0o755)
            with open(os.path.join(debian, "control"), "w", encoding="utf-8") as f:
                f.write(self.control(max(1, (size + 1023) // 1024)))
            for dirpath, dirnames, _ in os.walk(root):
                for d in dirnames:
                    os.chmod(os.path.join(dirpath, d), 0o755)
            os.chmod(root, 0o755)
            out = os.path.join(out_dir, self.filename)
            subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, out], check=True, stdout=subprocess.DEVNULL)
            return out


def _stanza(deb_path, rel):
    control = subprocess.run(["dpkg-deb", "-f", deb_path], check=True, capture_output=True, text=True).stdout.rstrip("\n")
    data = open(deb_path, "rb").read()
    return control + f"\nFilename: ./{rel}\nSize: {len(data)}\nMD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"


def write_index(out_dir):
    """Packages, Packages.gz and Release of a flat repository (``./``)."""
    debs = sorted(f for f in os.listdir(out_dir) if f.endswith(".deb"))
    text = "\n".join(_stanza(os.path.join(out_dir, f), f) for f in debs)
    with open(os.path.join(out_dir, "Packages"), "w", encoding="utf-8") as f:
        f.write(text)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(text.encode())
    with open(os.path.join(out_dir, "Packages.gz"), "wb") as f:
        f.write(buf.getvalue())
    lines = [
        "Origin: linerate-lab",
        "Label: linerate-lab",
        "Suite: ./",
        "Codename: linerate-lab",
        "Date: " + time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()),
        f"Architectures: {ARCH}",
        "Description: linerate lab: simulated NVIDIA networking and GPU driver packages",
    ]
    for algo, key in (("md5", "MD5Sum"), ("sha256", "SHA256")):
        lines.append(f"{key}:")
        for name in ("Packages", "Packages.gz"):
            data = open(os.path.join(out_dir, name), "rb").read()
            lines.append(f" {hashlib.new(algo, data).hexdigest()} {len(data):>16} {name}")
    with open(os.path.join(out_dir, "Release"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
