"""ansible-test sanity on the collection as it ships (`make sanity`).

ansible-test wants the collection at .../ansible_collections/linerate/fabric;
this checkout is at any path. So the files `ansible-galaxy collection build`
would ship (git's tracked and untracked-but-not-ignored files, less
galaxy.yml's build_ignore), plus tests/sanity/, are copied to
<tmp>/linerate-sanity-<hash>/ansible_collections/linerate/fabric and tested
there.

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
import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Outside the checkout: inside a git work tree ansible-test lists files with
# git, which ignores the copy.
WORK = os.path.join(tempfile.gettempdir(), "linerate-sanity-" + hashlib.sha256(ROOT.encode()).hexdigest()[:8])
DEST = os.path.join(WORK, "ansible_collections", "linerate", "fabric")
HOME = os.path.join(ROOT, ".ansible", "sanity-home")
BIN = os.path.dirname(sys.executable)


def shipped_files():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        ignore = yaml.safe_load(f).get("build_ignore") or []
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    files = []
    for rel in sorted(filter(None, out.split("\0"))):
        parts = rel.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        if rel.startswith("tests/sanity/") or not any(fnmatch.fnmatch(p, pat) for p in prefixes for pat in ignore):
            if os.path.lexists(os.path.join(ROOT, rel)):
                files.append(rel)
    return files


def copy_collection():
    shutil.rmtree(WORK, ignore_errors=True)
    for rel in shipped_files():
        src, dst = os.path.join(ROOT, rel), os.path.join(DEST, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


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
