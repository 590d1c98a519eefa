#!/usr/bin/env python3
"""Runs a command in a throw-away VM booting a stock Debian kernel, and returns its status.

    tests/vm/kqvm.py run 6.12 -- 'uname -r'       # or 6.1
    tests/vm/kqvm.py fetch 6.12                   # download and prepare only

The kernel package is fetched once with `apt-get download` through a private apt
configuration (bookworm-backports for 6.12, bookworm-security for 6.1, on the mirror the
system's sources name), unpacked with `dpkg -x` (never installed), and cached in
$KQ_VM_CACHE (default ~/.cache/kq-vm). The guest boots the uncompressed vmlinux under qemu's
software emulation with an initramfs of busybox-static and the kernel's 9p/overlay modules;
the host's / is shared read-only under a tmpfs overlay, so binaries from the host (kq from the
build tree, python3) run unchanged and nothing reaches the host. The command and its exit
status pass through a second 9p share; its output comes back over a virtio console.
"""
import argparse
import glob
import hashlib
import gzip
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

CACHE = os.environ.get("KQ_VM_CACHE", os.path.expanduser("~/.cache/kq-vm"))
KERNELS = {
    # name: (suite, package regex)
    "6.12": ("bookworm-backports", r"^linux-image-6\.12\.\d+\+deb12-amd64$"),
    "6.1": ("bookworm-security", r"^linux-image-6\.1\.0-\d+-amd64$"),
}
# The guest's own modules, loaded at boot (with what they need): the host's root, its console,
# and what packet tests build (veth pairs, a bridge, VXLAN; nftables with conntrack, DNAT and
# masquerade).
MODULES = ["virtio_pci", "netfs", "9pnet", "9pnet_virtio", "9p", "overlay", "virtio_console",
           "veth", "bridge", "vxlan", "nft_chain_nat", "nft_nat", "nft_masq", "nft_ct", "sch_ingress", "cls_bpf"]


def log(msg):
    print(f"kqvm: {msg}", file=sys.stderr, flush=True)


def mirror():
    """The Debian mirror the system's apt sources use."""
    for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*"):
        try:
            text = open(path).read()
        except OSError:
            continue
        m = re.search(r"(?:URIs:|deb)\s+(?:\[[^\]]*\]\s+)?(\S+/debian)\s*$", text, re.M)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


def apt(args, suite):
    root = os.path.join(CACHE, "apt")
    os.makedirs(os.path.join(root, "lists", "partial"), exist_ok=True)
    os.makedirs(os.path.join(root, "cache", "archives", "partial"), exist_ok=True)
    base = mirror()
    if suite.endswith("-security"):
        base = base.replace("/debian", "/debian-security")
    sources = os.path.join(root, f"{suite}.list")
    with open(sources, "w") as f:
        f.write(f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {base} {suite} main\n")
    opts = ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={root}/lists/{suite}", "-o", f"Dir::Cache={root}/cache",
            "-o", "APT::Sandbox::User=root"]
    os.makedirs(f"{root}/lists/{suite}/partial", exist_ok=True)
    return opts


def newest_package(name):
    suite, pattern = KERNELS[name]
    opts = apt([], suite)
    subprocess.run(["apt-get", *opts, "update", "-qq"], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run(["apt-cache", *opts, "search", "--names-only", "^linux-image-6"],
                         check=True, capture_output=True, text=True).stdout
    names = [line.split()[0] for line in out.splitlines() if re.match(pattern, line.split()[0])]
    if not names:
        raise SystemExit(f"kqvm: no package matches {pattern} in {suite}")
    names.sort(key=lambda n: [int(x) for x in re.findall(r"\d+", n)])
    return names[-1], opts


def extract_vmlinux(vmlinuz, out):
    """The uncompressed ELF inside a bzImage (the decompressor is slow under emulation)."""
    data = open(vmlinuz, "rb").read()
    tries = [(b"\xfd7zXZ\x00", lambda d: lzma.LZMADecompressor().decompress(d)),
             (b"\x1f\x8b\x08", lambda d: gzip.decompress(d)),
             (b"\x28\xb5\x2f\xfd", None)]
    for magic, decompress in tries:
        start = data.find(magic)
        while start != -1:
            try:
                if decompress is None:
                    elf = subprocess.run(["zstd", "-dcq"], input=data[start:], capture_output=True).stdout
                else:
                    elf = decompress(data[start:])
                if elf[:4] == b"\x7fELF":
                    open(out, "wb").write(elf)
                    return
            except Exception:
                pass
            start = data.find(magic, start + 1)
    raise SystemExit(f"kqvm: no ELF kernel found inside {vmlinuz}")


INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules); do insmod /lib/modules/$m 2>/dev/null; done
mkdir -p /host /cmd /upper /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 kqcmd /cmd
mount -t tmpfs tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/host,upperdir=/upper/u,workdir=/upper/w /newroot
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mount -t tracefs tracefs /newroot/sys/kernel/tracing
mount -t debugfs debugfs /newroot/sys/kernel/debug
mount -t bpf bpf /newroot/sys/fs/bpf
mount -t tmpfs tmpfs /newroot/run
mkdir -p /newroot/kqvm
mount --bind /cmd /newroot/kqvm
ip link set lo up
ulimit -l unlimited
exec 3<>/dev/hvc0
stty -F /dev/hvc0 raw -echo
cd /newroot
chroot /newroot /bin/sh -c 'cd "$(cat /kqvm/cwd)"; exec /bin/sh /kqvm/command' >/dev/hvc0 2>&1 </dev/null
echo $? > /cmd/status
sync
poweroff -f
"""


def prepare(name):
    package, opts = newest_package(name)
    home = os.path.join(CACHE, package)
    ready = os.path.join(home, "ready")
    # The cache is rebuilt when the guest's layout (init script, modules) changes.
    stamp = hashlib.sha256((INIT + " ".join(MODULES)).encode()).hexdigest()
    if os.path.exists(ready) and open(ready).read().split()[-1:] == [stamp]:
        return home
    log(f"fetching {package}")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    subprocess.run(["apt-get", *opts, "download", "-qq", package], cwd=home, check=True)
    deb = glob.glob(os.path.join(home, "*.deb"))[0]
    root = os.path.join(home, "root")
    subprocess.run(["dpkg", "-x", deb, root], check=True)
    version = os.listdir(os.path.join(root, "lib", "modules"))[0]
    extract_vmlinux(os.path.join(root, "boot", f"vmlinuz-{version}"), os.path.join(home, "vmlinux"))
    subprocess.run(["depmod", "-b", root, version], check=True)

    # initramfs: busybox, the modules (decompressed; order from modprobe), /init.
    initrd = os.path.join(home, "initrd")
    os.makedirs(os.path.join(initrd, "bin"))
    os.makedirs(os.path.join(initrd, "lib", "modules"))
    for d in ["proc", "sys", "dev"]:
        os.makedirs(os.path.join(initrd, d))
    busybox = shutil.which("busybox") or "/bin/busybox"
    shutil.copy(busybox, os.path.join(initrd, "bin", "busybox"))
    order = []
    for module in MODULES:
        out = subprocess.run(["modprobe", "-d", root, "-S", version, "--show-depends", module],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            if not line.startswith("insmod "):
                continue
            path = line.split()[1]
            ko = os.path.basename(path)
            for ext, opener in [(".xz", lzma.open), (".gz", gzip.open)]:
                if ko.endswith(ext):
                    ko = ko[: -len(ext)]
                    data = opener(path).read()
                    break
            else:
                if ko.endswith(".zst"):
                    ko = ko[:-4]
                    data = subprocess.run(["zstd", "-dcq", path], capture_output=True, check=True).stdout
                else:
                    data = open(path, "rb").read()
            if ko not in order:
                order.append(ko)
                open(os.path.join(initrd, "lib", "modules", ko), "wb").write(data)
    open(os.path.join(initrd, "modules"), "w").write("\n".join(order) + "\n")
    with open(os.path.join(initrd, "init"), "w") as f:
        f.write(INIT)
    os.chmod(os.path.join(initrd, "init"), 0o755)
    cpio = subprocess.run("find . | cpio -o -H newc --quiet", shell=True, cwd=initrd,
                          capture_output=True, check=True).stdout
    open(os.path.join(home, "initramfs.cpio"), "wb").write(cpio)
    shutil.rmtree(initrd)
    open(ready, "w").write(f"{package} {stamp}\n")
    log(f"{package} ready in {home}")
    return home


def boot(home, share, command, timeout):
    """Boots the guest once to run `command`: its exit status, or None if the guest did not
    finish (its kernel crashed, or it ran past `timeout`), with the kernel log printed."""
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        raise SystemExit("kqvm: qemu-system-x86_64 is not installed")
    open(os.path.join(share, "command"), "w").write(command + "\n")
    open(os.path.join(share, "cwd"), "w").write(os.getcwd() + "\n")
    status_file = os.path.join(share, "status")
    if os.path.exists(status_file):
        os.remove(status_file)
    with tempfile.TemporaryDirectory(prefix="kqvm-") as tmp:
        out = os.path.join(tmp, "out")
        args = [
            "timeout", "--foreground", str(timeout), qemu,
            "-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max", "-smp", "2", "-m", "3072",
            "-kernel", os.path.join(home, "vmlinux"), "-initrd", os.path.join(home, "initramfs.cpio"),
            "-append", "console=ttyS0 panic=-1 quiet loglevel=3",
            "-display", "none", "-no-reboot", "-serial", f"file:{tmp}/kernel.log",
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={share},mount_tag=kqcmd,security_model=none",
            "-device", "virtio-serial-pci", "-chardev", f"file,id=out,path={out}",
            "-device", "virtconsole,chardev=out",
        ]
        proc = subprocess.run(args)
        if os.path.exists(out):
            sys.stdout.write(open(out, errors="replace").read())
            sys.stdout.flush()
        if not os.path.exists(status_file):
            log(f"the VM did not finish (qemu status {proc.returncode}); kernel log:")
            sys.stderr.write(open(f"{tmp}/kernel.log", errors="replace").read()[-4000:])
            sys.stderr.flush()
            return None
        return int(open(status_file).read().strip() or 125)


def progress(share):
    """The tests the guest started and ended so far, from the lines tests/vm/vm_test.py
    writes to $KQVM_PROGRESS: ([started, in order], {ended: outcome})."""
    started, ended = [], {}
    path = os.path.join(share, "progress")
    for line in open(path).read().splitlines() if os.path.exists(path) else []:
        word, _, rest = line.partition(" ")
        if word == "start":
            started.append(rest)
        elif word == "end":
            test, _, outcome = rest.rpartition(" ")
            ended[test] = outcome
    return started, ended


def run(name, command, timeout):
    """Runs `command` in the guest. A command that writes its progress (tests/vm/vm_test.py)
    survives one crash of the guest's kernel: the guest boots again and runs what was left,
    the test it crashed in first. Under qemu's software emulation, 6.12 has crashed while
    kprobe.multi's 1,945 sites were being unpatched after kq's exit (an int3 taken at a site
    being rewritten, in a packet's softirq), and once ran past its time in a packet test. If
    the guest stops again, the run fails."""
    home = prepare(name)
    with tempfile.TemporaryDirectory(prefix="kqvm-share-") as share:
        guest_command = f"export KQVM_PROGRESS=/kqvm/progress\n{command}"
        status = boot(home, share, guest_command, timeout)
        started, ended = progress(share)
        left = [t for t in started if t not in ended]
        printed = set(started)  # the tests whose own output reached us
        if status is None and left:
            log(f"the guest stopped in {left[-1]}; booting it again for that test and those after it")
            before = len(started)
            status = boot(home, share, guest_command, timeout)
            started, ended = progress(share)
            printed = set(started[before:])
        if status is None:
            return 125
        # A test that failed before the guest stopped fails the run (its traceback, printed
        # at the end of that boot's run, was lost with the guest).
        for test, outcome in ended.items():
            if outcome not in ("ok", "skipped") and test not in printed:
                log(f"{test}: {outcome}, before the guest stopped")
                status = status or 1
        return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("kernel", choices=sorted(KERNELS))
    r = sub.add_parser("run")
    r.add_argument("kernel", choices=sorted(KERNELS))
    r.add_argument("--timeout", type=int, default=600)
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        command = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    a = parser.parse_args(argv)
    if a.action == "fetch":
        prepare(a.kernel)
        return 0
    return run(a.kernel, " ".join(command), a.timeout)


if __name__ == "__main__":
    sys.exit(main())
