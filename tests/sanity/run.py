"""ansible-test sanity on the collection as it ships (`make sanity`).

ansible-test wants the collection at .../ansible_collections/linerate/fabric;
this checkout is at any path. So the collection is built (`ansible-galaxy
collection build`: galaxy.yml's manifest allow-list, tests/sanity/ignore-*.txt
included) and the artifact unpacked at
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

Usage: tests/sanity/run.py [ansible-test sanity options...]
  default options: --local --python <this Python's X.Y>
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Outside the checkout: inside a git work tree ansible-test lists files with
# git, which ignores the copy.
WORK = os.path.join(tempfile.gettempdir(), "linerate-sanity-" + hashlib.sha256(ROOT.encode()).hexdigest()[:8])
DEST = os.path.join(WORK, "ansible_collections", "linerate", "fabric")
HOME = os.path.join(ROOT, ".ansible", "sanity-home")
BIN = os.path.dirname(sys.executable)


def copy_collection():
    """The artifact itself: `ansible-galaxy collection build` (galaxy.yml's manifest allow-list, which ships
    tests/sanity/ignore-*.txt) unpacked at DEST, so sanity tests exactly what a user installs."""
    import tarfile  # pylint: disable=import-outside-toplevel
    shutil.rmtree(WORK, ignore_errors=True)
    out = os.path.join(WORK, "build")
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--force", "--output-path", out,
                    ROOT], check=True, stdout=subprocess.DEVNULL)
    (artifact,) = [f for f in os.listdir(out) if f.endswith(".tar.gz")]
    os.makedirs(DEST)
    with tarfile.open(os.path.join(out, artifact)) as tar:
        tar.extractall(DEST, filter="data")


def pip_home():
    """HOME for ansible-test: pip's settings as a file, the bootstrap script cached."""
    conf = os.path.join(HOME, ".config", "pip", "pip.conf")
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=False).stdout
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
    args = argv or ["--local", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}"]
    copy_collection()
    pip_home()
    env = dict(os.environ, HOME=HOME, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    start = time.monotonic()
    rc = subprocess.run([os.path.join(BIN, "ansible-test"), "sanity", *args], cwd=DEST, env=env,
                        check=False).returncode
    print(f"sanity: ansible-test sanity {' '.join(args)}: rc {rc} in {time.monotonic() - start:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
