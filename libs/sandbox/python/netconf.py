"""Routes of a sandbox's own network namespace: the egress policy, enforced below the socket API.

The namespace reaches the outside only through slirp4netns (a user-mode network stack on tap0,
gateway 10.0.2.2, DNS 10.0.2.3, started by the runner). The runner turns its egress policy into
routes (see egress.ts): `prohibit` routes for every refused range (connect() fails with EACCES)
and routes through the gateway for allowlisted ones. They are installed here, by a process that
holds CAP_NET_ADMIN in the sandbox's user namespace, before any tool code runs; tool processes
hold no capability and cannot change them.

`apply(routes)` takes [{"dst": "10.0.0.0/8", "type": "prohibit" | "gateway"}] (IPv4 and IPv6).
"""

import fcntl
import ipaddress
import os
import socket
import struct

NETLINK_ROUTE = 0
RTM_NEWROUTE = 24
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_UNIVERSE = 254, 4, 0
RTN_UNICAST, RTN_PROHIBIT = 1, 8
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
GATEWAY = "10.0.2.2"
DEVICE = "tap0"


def _rta(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def _route_message(seq, net, kind, oif):
    family = socket.AF_INET if net.version == 4 else socket.AF_INET6
    rtm_type = RTN_PROHIBIT if kind == "prohibit" else RTN_UNICAST
    body = struct.pack("=BBBBBBBBI", family, net.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_UNIVERSE, rtm_type, 0)
    if net.prefixlen:
        body += _rta(RTA_DST, net.network_address.packed)
    if kind == "gateway":
        body += _rta(RTA_GATEWAY, socket.inet_aton(GATEWAY)) + _rta(RTA_OIF, struct.pack("=i", oif))
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWROUTE, flags, seq, 0) + body


def link_up(name):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifreq = struct.pack("16sH14x", name.encode(), 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", name.encode(), flags | IFF_UP))
    finally:
        sock.close()


def apply(routes):
    oif = socket.if_nametoindex(DEVICE)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    try:
        sock.bind((0, 0))
        for seq, route in enumerate(routes, 1):
            net = ipaddress.ip_network(route["dst"], strict=True)
            if route["type"] == "gateway" and net.version != 4:
                continue  # slirp4netns serves IPv4 only: there is no IPv6 gateway to route through
            sock.send(_route_message(seq, net, route["type"], oif))
            reply = sock.recv(65536)
            length, kind, _flags, rseq, _pid = struct.unpack("=IHHII", reply[:16])
            if kind != NLMSG_ERROR or rseq != seq:
                raise OSError("unexpected netlink reply %d to route %s" % (kind, route["dst"]))
            (error,) = struct.unpack("=i", reply[16:20])
            if error:
                raise OSError(-error, "route %s %s: %s" % (route["type"], route["dst"], os.strerror(-error)))
    finally:
        sock.close()
