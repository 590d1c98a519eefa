"""What the network namespace scripts (nat_udp.py, xdp_udp.py, bridge_udp.py) share: marked
UDP sent in one namespace and read in another. Each script is its own two halves, run in
the namespaces by `main()`."""
import socket
import subprocess
import sys


def sender(mark, address, port):
    """A UDP socket marked `mark`, bound to (address, port)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
    s.bind((address, port))
    return s


def receive(address, port):
    """In the receiving namespace: says when it listens, then how many bytes it read."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind((address, port))
    receiver.settimeout(20)
    print("listening", flush=True)
    print(len(receiver.recv(2048)), flush=True)


def main(script, send, receive_at, expected):
    """`script MARK NS_A NS_B`: listens in B at `receive_at` (address, port), runs `send(mark)`
    in A, and exits with an error unless B read `expected` bytes. `script MARK --send -` and
    `script MARK --receive -` are the halves, run in the namespaces."""
    mark, ns_a, ns_b = int(sys.argv[1], 0), sys.argv[2], sys.argv[3]
    if ns_a == "--send":
        return send(mark)
    if ns_a == "--receive":
        return receive(*receive_at)
    receiver = subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, script, str(mark), "--receive", "-"],
                                stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline() == "listening\n"
    subprocess.run(["ip", "netns", "exec", ns_a, sys.executable, script, str(mark), "--send", "-"], check=True)
    read = receiver.stdout.readline().strip()
    receiver.wait(timeout=20)
    if read != str(expected):
        sys.exit(f"B read {read or 'nothing'}, not the {expected}-byte datagram")


def groups(events, key):
    """`events` (JSON objects) in time order, grouped by `key` (`journey`, `packet_id`): the
    groups in the order of their first event."""
    out = {}
    for e in sorted(events, key=lambda e: e["timestamp"]):
        out.setdefault(e[key], []).append(e)
    return list(out.values())


def places(events):
    """(namespace name, device) at each event that has a device, a run of the same once."""
    seen = [(e["dev_netns_name"], e["ifname"]) for e in events if e["dev_netns_name"] != 0]
    return [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]
