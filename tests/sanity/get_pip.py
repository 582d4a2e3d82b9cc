"""Offline stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test creates an empty virtual environment per sanity test and runs
``~/.ansible/test/cache/get_pip_<version>.py <pip options> pip==<version>``
in it; the real script is downloaded from ci-files.testing.ansible.com,
which a machine with only a package index (PyPI or a mirror) cannot reach.
This one does the same with the standard library: ensurepip puts Python's
bundled pip into the environment, then pip installs what was asked (the
pinned pip) from the configured index. ``make sanity`` copies it into
ansible-test's cache when the real script is not there.
"""

import subprocess
import sys

# Options only the real get-pip.py understands.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}


def main(argv):
    # Each in its own process: ensurepip clears pip's configuration (index,
    # certificates) in the environment of the process it runs in.
    subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade"], check=True)
    return subprocess.run([sys.executable, "-m", "pip", "install"] + [a for a in argv if a not in GET_PIP_ONLY], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
