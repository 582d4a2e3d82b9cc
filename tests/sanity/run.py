"""ansible-test sanity on the collection as it ships (`make sanity`).

ansible-test wants the collection at .../ansible_collections/linerate/fabric;
this checkout is at any path. So the collection is built (`ansible-galaxy
collection build`: galaxy.yml's manifest allow-list) and the artifact unpacked at
<tmp>/linerate-sanity-<hash>/ansible_collections/linerate/fabric and tested
there: sanity runs on what a user installs.

ansible-test runs each test in its own virtual environment with its own
pinned requirements, from the package index pip is configured for. Two
things make that work on a machine that reaches only a package index:
- ansible-test passes pip no environment variables (PIP_CERT, PIP_INDEX_URL,
  ...): they go into a pip.conf in the HOME ansible-test runs with
  (.ansible/sanity-home, which also keeps its virtual environments and
  cache out of the user's ~/.ansible);
- its pip bootstrap script is downloaded from ci-files.testing.ansible.com:
  where the cache has none, tests/sanity/get_pip.py stands in (ensurepip,
  then pip installs the pinned pip from the index).

The ignore files (tests/sanity/ignore-<core X.Y>.txt, one per supported
ansible-core) do not ship (galaxy-importer warns about an artifact that
carries them): they are laid beside the unpacked artifact's files. Each run
uses the ansible-test of the Python that runs this script, in a tree of its
own per ansible-core (make release-check: 2.19, 2.20, 2.21).

Usage: tests/sanity/run.py [--artifact linerate-fabric-X.Y.Z.tar.gz] [ansible-test sanity options...]
  default: the artifact built from this checkout; options --local --python <this Python's X.Y>
"""

import glob
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Outside the checkout: inside a git work tree ansible-test lists files with
# git, which ignores the copy.
BIN = os.path.dirname(sys.executable)
# One tree per checkout and per ansible-core (make release-check runs each supported one from its own venv).
CORE = importlib.metadata.version("ansible-core")
WORK = os.path.join(tempfile.gettempdir(), f"linerate-sanity-{hashlib.sha256(ROOT.encode()).hexdigest()[:8]}-{CORE}")
DEST = os.path.join(WORK, "ansible_collections", "linerate", "fabric")
HOME = os.path.join(ROOT, ".ansible", "sanity-home")
SANITY = os.path.join(ROOT, "tests", "sanity")


def copy_collection(artifact=None):
    """The artifact itself (`artifact`, or `ansible-galaxy collection build`: galaxy.yml's manifest allow-list)
    unpacked at DEST, so sanity tests exactly what a user installs, the checkout's ignore files beside it."""
    import tarfile  # pylint: disable=import-outside-toplevel

    shutil.rmtree(WORK, ignore_errors=True)
    if artifact is None:
        out = os.path.join(WORK, "build")
        subprocess.run(
            [os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--force", "--output-path", out, ROOT], check=True, stdout=subprocess.DEVNULL
        )
        (name,) = [f for f in os.listdir(out) if f.endswith(".tar.gz")]
        artifact = os.path.join(out, name)
    os.makedirs(DEST)
    with tarfile.open(artifact) as tar:
        tar.extractall(DEST, filter="data")
    # The ignore files are this test's configuration, kept with the tests (galaxy-importer warns about an
    # artifact that ships them): laid beside the artifact's files, which they never replace.
    os.makedirs(os.path.join(DEST, "tests", "sanity"), exist_ok=True)
    for path in sorted(glob.glob(os.path.join(SANITY, "ignore-*.txt"))):
        target = os.path.join(DEST, "tests", "sanity", os.path.basename(path))
        if os.path.exists(target):
            raise SystemExit(
                f"sanity: the artifact ships {os.path.relpath(target, DEST)}; it must not "
                "(galaxy.yml manifest: tests/sanity/ignore-*.txt stays in the checkout)"
            )
        shutil.copy(path, target)


def pip_home():
    """HOME for ansible-test: pip's settings as a file, the bootstrap script cached."""
    conf = os.path.join(HOME, ".config", "pip", "pip.conf")
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False).stdout
    settings = {}
    for line in listed.splitlines():
        key, _sep, value = line.partition("=")
        scope, _sep, name = key.rpartition(".")
        if scope in ("global", ":env:", "install") and name:
            settings[name] = value.strip().strip("'\"")
    with open(conf, "w", encoding="utf-8") as f:
        f.write("[global]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(settings.items())))
    from ansible_test._internal.python_requirements import get_venv_packages  # pylint: disable=import-outside-toplevel
    from ansible_test._internal.host_configs import NativePythonConfig  # pylint: disable=import-outside-toplevel

    pip_version = get_venv_packages(NativePythonConfig(version=f"{sys.version_info[0]}.{sys.version_info[1]}"))["pip"]
    cache = os.path.join(HOME, ".ansible", "test", "cache", f"get_pip_{pip_version.replace('.', '_')}.py")
    if not os.path.exists(cache):
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        shutil.copy(os.path.join(ROOT, "tests", "sanity", "get_pip.py"), cache)


def main(argv):
    artifact = None
    if argv[:1] == ["--artifact"]:
        artifact, argv = os.path.abspath(argv[1]), argv[2:]
    args = argv or ["--local", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}"]
    copy_collection(artifact)
    pip_home()
    env = dict(os.environ, HOME=HOME, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    start = time.monotonic()
    rc = subprocess.run([os.path.join(BIN, "ansible-test"), "sanity", *args], cwd=DEST, env=env, check=False).returncode
    print(f"sanity: ansible-test sanity {' '.join(args)}: rc {rc} in {time.monotonic() - start:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
