"""The lab's node image (`labctl.py image`: debootstrap, no registry) and the local DOCA-OFED repository of
simulator packages it is built with (`labctl.py repo`)."""

import ast
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import slurmlab  # (its customize_rootfs shapes the image: IMAGE_RECIPE_VERSION)
from labbase import HERE, IMAGE, MIRROR, STATE, log, podman, run

NODE_PACKAGES = [
    "python3",
    "python3-apt",
    "openssh-server",
    "iproute2",
    "kmod",
    "ethtool",
    "procps",
    "systemd",
    "systemd-sysv",
    "dbus",
    "ca-certificates",
    "gnupg",
    # nccl-tests' launcher: mpirun starts its ranks over SSH between nodes.
    "openmpi-bin",
    "openssh-client",
    # InfiniBand: the real OpenSM (a GPU node can be an SM host), the
    # libraries of the real diag tools, libumad2sim (the node's "HCA" on
    # the ibsim subnet) and ibsim itself (the lab's subnet container).
    # infiniband-diags' programs are also copied aside (stash_ib_diags).
    "opensm",
    "infiniband-diags",
    "libibmad5",
    "libibnetdisc5",
    "libibumad3",
    "libumad2sim0",
    "ibsim-utils",
    # the lab's real Slurm (lab/slurmlab.py): slurmd on every node, slurmctld in its own container
    *slurmlab.PACKAGES,
]
# Everything that shapes the image; a change rebuilds it.
IMAGE_RECIPE_VERSION = 8
# Installed into the image from the lab's repository: the simulated hardware
# and the GPU driver a GPU node's base image already has. OFED, peermem and
# everything else are the roles' job.
IMAGE_DEBS = ["linerate-lab-hw", "nvidia-kernel-common", "nvidia-kernel-open-dkms", "nvidia-smi", "nvidia-driver", "nvidia-open", "cuda-drivers"]
GPU_DRIVER = "550.54.15-1"


def apt_mirror():
    if MIRROR:
        return MIRROR
    for path in ("/etc/apt/sources.list.d/debian.sources",):
        if os.path.exists(path):
            for line in open(path):
                if line.startswith("URIs:"):
                    return line.split()[1]
    if os.path.exists("/etc/apt/sources.list"):
        for line in open("/etc/apt/sources.list"):
            parts = line.split()
            if parts[:1] == ["deb"] and "debian" in line:
                return parts[1]
    return "http://deb.debian.org/debian"


def made_of(rel="packages.py"):
    """lab/<rel> and the lab modules it imports, transitively: lab/<name>.py (beside it) and
    lab/sim/<pkg>/<mod>.py (on the path it puts lab/sim on), as paths relative to lab/, sorted."""
    found, todo = set(), [rel]
    while todo:
        cur = todo.pop()
        if cur in found:
            continue
        found.add(cur)
        with open(os.path.join(HERE, cur)) as f:
            tree = ast.parse(f.read())
        names = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            for base in ("", "sim/"):
                path = base + name.replace(".", "/") + ".py"
                if os.path.isfile(os.path.join(HERE, path)):
                    todo.append(path)
    return sorted(found)


def repo_recipe():
    """What the simulator packages are made of (packages.py and every lab module it builds them with): a
    change rebuilds the repo and image."""
    h = hashlib.sha256(platform.release().encode())
    for rel in made_of("packages.py"):
        with open(os.path.join(HERE, rel), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def image_tag():
    h = hashlib.sha256(json.dumps([IMAGE_RECIPE_VERSION, NODE_PACKAGES, IMAGE_DEBS, repo_recipe()]).encode())
    return f"{IMAGE}:r{IMAGE_RECIPE_VERSION}-{h.hexdigest()[:8]}"


def image_exists(tag):
    return podman("image", "exists", tag, check=False).returncode == 0


def release_mounts(root):
    """Unmount whatever is mounted under root (deepest first): debootstrap mounts
    /proc and /sys in its target, and a build that was interrupted leaves them,
    which would make anything that walks the lab state (a copy, rm -rf) read
    /proc/kmsg forever."""
    root = os.path.realpath(root)
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].replace("\\040", " ") for line in f]
    for point in sorted((p for p in points if p == root or p.startswith(root + os.sep)), key=len, reverse=True):
        run(["umount", "-l", point], check=False, capture=True)


def build_image(force=False):
    tag = image_tag()
    if image_exists(tag) and not force:
        log(f"image {tag} is built")
        return tag
    rootfs = os.path.join(STATE, "build", "rootfs")
    release_mounts(os.path.join(STATE, "build"))
    shutil.rmtree(rootfs, ignore_errors=True)
    os.makedirs(rootfs)
    t0 = time.monotonic()
    log(f"building {tag} with debootstrap from {apt_mirror()} (about a minute)")
    debootstrap(rootfs)
    customize_rootfs(rootfs)
    slurmlab.customize_rootfs(rootfs)
    stash_ib_diags(rootfs)
    install_image_debs(rootfs, build_repo())
    # debootstrap leaves /proc mounted in the tree when a package's scripts keep it busy (seen with
    # the Slurm packages): an image must not carry the build machine's /proc
    release_mounts(rootfs)
    tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(HERE, "containers.conf"))
    subprocess.run(
        ["podman", "import", "-q", "--change", 'CMD ["/sbin/init"]', "--change", "STOPSIGNAL=SIGRTMIN+3", "-", tag],
        stdin=tar.stdout,
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    tar.wait()
    podman("tag", tag, f"{IMAGE}:latest")  # what molecule scenarios name
    release_mounts(os.path.join(STATE, "build"))
    shutil.rmtree(os.path.join(STATE, "build"), ignore_errors=True)
    log(f"image {tag} built in {time.monotonic() - t0:.0f} s")
    return tag


def debootstrap(rootfs, tries=2):
    """debootstrap the node's root file system; a mirror that fails mid-download
    (seen here: exit 2 after 20 s on a fresh machine) gets one more try on a
    clean tree, and a second failure shows what debootstrap logged."""
    argv = ["debootstrap", "--variant=minbase", "--include=" + ",".join(NODE_PACKAGES), "bookworm", rootfs, apt_mirror()]
    for attempt in range(1, tries + 1):
        res = run(argv, check=False, capture=True)
        if res.returncode == 0:
            return
        logfile = os.path.join(rootfs, "debootstrap", "debootstrap.log")
        tail = ""
        if os.path.exists(logfile):
            with open(logfile, errors="replace") as f:
                tail = "".join(f.readlines()[-15:])
        out = "\n".join(((res.stdout or "") + (res.stderr or "")).strip().splitlines()[-15:])
        if attempt == tries:
            raise SystemExit(f"lab: debootstrap failed ({res.returncode}) {tries} times: {' '.join(argv)}\n{out}\n--- {logfile}:\n{tail}")
        log(f"debootstrap failed ({res.returncode}), trying again on a clean tree:\n{out}")
        release_mounts(os.path.dirname(rootfs))
        shutil.rmtree(rootfs, ignore_errors=True)
        os.makedirs(rootfs)


def stash_ib_diags(root):
    """Keep a copy of Debian's infiniband-diags programs aside.

    The OFED stack brings its own infiniband-diags, which in the lab is the
    simulated package (ibstat reads the fabric model); installing it upgrades
    Debian's (opensm depends on the name), and dpkg removes the real
    programs. That package's sminfo, ibnetdiscover, iblinkinfo, ... run the
    copies kept here, which talk MADs to the ibsim subnet through libumad2sim.
    """
    sys.path.insert(0, HERE)
    import packages

    stash = os.path.join(root, packages.REAL_IB_DIAGS.lstrip("/"))
    files = run(["chroot", root, "dpkg-query", "-L", "infiniband-diags"], capture=True).stdout.split()
    for rel in files:
        src = os.path.join(root, rel.lstrip("/"))
        if os.path.isfile(src) and not os.path.islink(src) and rel.startswith(("/usr/sbin/", "/usr/bin/")):
            dst = os.path.join(stash, rel.lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
    missing = [t for t in packages.IB_DIAG_TOOLS if not os.path.exists(os.path.join(stash, "usr/sbin", t))]
    if "sminfo" in missing or "ibnetdiscover" in missing:
        raise SystemExit(f"lab: Debian's infiniband-diags lacks {', '.join(missing)}")


def install_image_debs(root, repo):
    """The hardware package and the GPU driver, with dpkg in the rootfs."""
    debs = []
    for name in IMAGE_DEBS:
        version = "1.0" if name == "linerate-lab-hw" else GPU_DRIVER
        path = os.path.join(repo, f"{name}_{version}_amd64.deb")
        if not os.path.exists(path):
            raise SystemExit(f"lab: {os.path.basename(path)} is not in the lab repository {repo}")
        debs.append(path)
    tmp = os.path.join(root, "tmp", "lab-debs")
    os.makedirs(tmp, exist_ok=True)
    for path in debs:
        shutil.copy(path, tmp)
    run(["chroot", root, "sh", "-c", "dpkg -i /tmp/lab-debs/*.deb"], capture=True)
    shutil.rmtree(tmp)
    # The node's power-on: firmware loads its next-boot settings, the boot-time
    # modules load (simulated hardware; see linerate_lab/tools/boot.py).
    unit = (
        "[Unit]\nDescription=linerate lab: power on the simulated NICs and GPUs\n"
        "DefaultDependencies=no\nAfter=local-fs.target\nBefore=sysinit.target systemd-modules-load.service\n\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/lib/linerate-lab-hw/boot\n\n"
        "[Install]\nWantedBy=sysinit.target\n"
    )
    path = os.path.join(root, "etc/systemd/system/linerate-lab-boot.service")
    with open(path, "w") as f:
        f.write(unit)
    wants = os.path.join(root, "etc/systemd/system/sysinit.target.wants")
    os.makedirs(wants, exist_ok=True)
    os.symlink("/etc/systemd/system/linerate-lab-boot.service", os.path.join(wants, "linerate-lab-boot.service"))
    # A container runs no udevd, so systemd never activates a netdev's device unit and nothing
    # starts the units enabled into it (linerate-rail@, linerate-roce-qos@): the lab's udev tells
    # systemd of each netdev as udevd does (linerate_lab/udev.py). Like systemd-udevd.service it
    # runs only where /sys is writable (lab nodes: lab/sim/node-init.sh), where systemd has device units.
    unit = (
        "[Unit]\nDescription=linerate lab: udev's network interface events for systemd's device units\n"
        "DefaultDependencies=no\nAfter=linerate-lab-boot.service\nBefore=sysinit.target\n"
        "ConditionPathIsReadWrite=/sys\n\n"
        "[Service]\nEnvironment=PYTHONPATH=/usr/lib/linerate-lab PYTHONDONTWRITEBYTECODE=1\n"
        "ExecStart=/usr/bin/python3 -m linerate_lab.udev\nRestart=always\n\n"
        "[Install]\nWantedBy=sysinit.target\n"
    )
    with open(os.path.join(root, "etc/systemd/system/linerate-lab-udev.service"), "w") as f:
        f.write(unit)
    os.symlink("/etc/systemd/system/linerate-lab-udev.service", os.path.join(wants, "linerate-lab-udev.service"))


def customize_rootfs(root):
    """Turn a minbase rootfs into a node: per-container host keys, no remote apt."""

    def write(rel, text, mode=0o644):
        path = os.path.join(root, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    # Host keys are made on each container's first boot, never shared.
    for name in os.listdir(os.path.join(root, "etc/ssh")):
        if name.startswith("ssh_host_"):
            os.remove(os.path.join(root, "etc/ssh", name))
    write(
        "/etc/systemd/system/ssh.service.d/10-hostkeys.conf", "[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n"
    )
    write("/etc/ssh/sshd_config.d/10-lab.conf", "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUseDNS no\nMaxStartups 100:30:200\n")
    # A node knows only the repositories Ansible configures (the lab's local
    # DOCA-OFED repository): nothing is downloaded at converge time.
    for rel in ("etc/apt/sources.list",):
        p = os.path.join(root, rel)
        if os.path.exists(p):
            os.remove(p)
    write("/etc/apt/apt.conf.d/99-lab", 'APT::Install-Recommends "false";\nAcquire::Languages "none";\n')
    # Units that make no sense in a container and slow boot down.
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "systemd-timesyncd.service", "getty@tty1.service"):
        link = os.path.join(root, "etc/systemd/system", unit)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink("/dev/null", link)
    write("/etc/profile.d/linerate-lab.sh", "export PYTHONDONTWRITEBYTECODE=1\n")
    os.makedirs(os.path.join(root, "root/.ssh"), mode=0o700, exist_ok=True)


def build_repo():
    sys.path.insert(0, HERE)
    import packages

    out = os.path.join(STATE, "apt")
    stamp = os.path.join(out, ".recipe")
    recipe = repo_recipe()
    if os.path.exists(stamp) and open(stamp).read() == recipe:
        return out
    # Build aside, then swap the files in: running nodes bind-mount this
    # directory, and a new directory would leave them looking at the old one.
    staging = out + ".new"
    packages.build_repo(staging)
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    for name in os.listdir(staging):
        os.replace(os.path.join(staging, name), os.path.join(out, name))
    os.rmdir(staging)
    with open(stamp, "w") as f:
        f.write(recipe)
    log(f"local DOCA-OFED package repository built in {out}")
    return out
