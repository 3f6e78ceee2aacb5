"""Live capture: a network interface's packets as `Packet` values, in capture order, for `kdissect live`.

Two backends, one interface (`LiveCapture`):

- Linux (`PacketSocketCapture`): an AF_PACKET socket read directly, with the BPF filter compiled by libpcap
  through scapy's ctypes bindings (`tcpdump -ddd` when only tcpdump is there) and attached in the kernel
  before the socket starts receiving. Scapy's own `L2ListenSocket` and `compile_filter` are not used: they
  stop at 65535 bytes of a packet (a loopback frame is up to 65550 with 64 KiB segments), the socket rounds
  timestamps to a float, and it keeps the packet type, which the loopback deduplication needs, to itself.
- elsewhere (`PcapCapture`): libpcap through scapy's ctypes bindings, which deduplicates loopback itself.

Loopback on Linux delivers every packet twice to a packet socket: once as it leaves (PACKET_OUTGOING) and once
as it arrives. Like libpcap, kdissect keeps only the arriving copy: for a loopback interface the outgoing
copies are dropped by the kernel filter itself (a two-instruction prefix), and, for `any`, in Python by the
interface they were seen on. Either way counts, byte totals and TCP reassembly see each packet once.

Link layers, as libpcap reports them: Ethernet and loopback are Ethernet-framed (LINKTYPE_ETHERNET, with VLAN
tags the NIC stripped put back from the kernel's auxiliary data); tun-like devices without a link header are
raw IP (LINKTYPE_RAW); `any` and every other device type are read "cooked" with a Linux SLL header built from
the socket address (LINKTYPE_LINUX_SLL). Timestamps are the kernel's, in nanoseconds (SO_TIMESTAMPNS).
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kdissect.capture.linktypes import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_RAW
from kdissect.capture.packet import Packet

SNAPLEN = 262144
"""Bytes kept per packet, as tcpdump: more than any frame, 64 KiB loopback segments included."""
BUFFER_BYTES = 32 << 20
"""The kernel's receive buffer for the capture socket: room for bursts while the dissector is busy."""

INSTALL_HINT = (
    "install libpcap (Debian/Ubuntu: apt-get install libpcap0.8; Fedora: dnf install libpcap; Alpine: apk add libpcap) or tcpdump"
)

# Linux constants the socket module does not all name
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_AUXDATA = 8
PACKET_VERSION = 10
TPACKET_V3 = 2
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
PACKET_OUTGOING = 4
SO_ATTACH_FILTER = 26
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
ARPHRD_ETHER = 1
ARPHRD_IEEE802 = 6
ARPHRD_LOOPBACK = 772
ARPHRD_RAWIP = 519
ARPHRD_NONE = 0xFFFE
DLT_EN10MB = 1
DLT_RAW = 12
SKF_AD_PKTTYPE = -0x1000 + 4
"""The kernel's BPF extension that loads the packet type (SKF_AD_OFF + SKF_AD_PKTTYPE)."""

ANY = "any"

_TIMESPEC = struct.Struct("qq")
_AUXDATA = struct.Struct("IIIHHHH")
_SLL = struct.Struct(">HHH8sH")
_VLAN = struct.Struct("!HH")
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) + socket.CMSG_SPACE(_AUXDATA.size) + 64

Program = list[tuple[int, int, int, int]]
"""BPF instructions: (code, jt, jf, k)."""


class LiveError(Exception):
    """A capture that cannot start or go on; the message is one line (or two) for the user."""


def capture_filter(ports: Iterable[int], bpf: str | None = None) -> str:
    """The BPF expression of a session: `bpf` as given, otherwise TCP on the Kafka ports."""
    if bpf is not None and bpf.strip():
        return bpf.strip()
    return " or ".join(f"tcp port {p}" for p in sorted(set(ports)))


def interfaces() -> list[str]:
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:
        return []


def _unknown_interface(name: str) -> LiveError:
    known = interfaces() + ([ANY] if sys.platform.startswith("linux") else [])
    listed = f" (this machine has: {', '.join(known)})" if known else ""
    return LiveError(f"no network interface named {name!r}{listed}")


def _no_privileges(interface: str) -> LiveError:
    exe = os.path.realpath(sys.executable)
    return LiveError(
        f"capturing on {interface} needs root or the CAP_NET_RAW capability: run kdissect with sudo, "
        f"or give the interpreter the capability: sudo setcap cap_net_raw,cap_net_admin=eip {exe}"
    )


# --- compiling filters -------------------------------------------------------------------------------


def compile_bpf(expression: str, dlt: int) -> Program:
    """Compile a filter for a link type with libpcap (through scapy), or with tcpdump when only it is there."""
    try:
        return _compile_libpcap(expression, dlt)
    except _NoLibpcap:
        pass
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        raise LiveError(f"compiling the capture filter needs libpcap, which is missing: {INSTALL_HINT}")
    return _compile_tcpdump(tcpdump, expression, dlt)


class _NoLibpcap(Exception):
    pass


def _compile_libpcap(expression: str, dlt: int) -> Program:
    """pcap_compile on a "dead" handle of the link type: no interface, no privileges. (Not scapy's
    `compile_filter`, whose programs accept only 65535 bytes of a packet.)"""
    try:
        from scapy.libs import winpcapy as pcap
    except ImportError as exc:
        if "scapy" in str(exc):
            raise LiveError(f"scapy is not installed ({exc}): pip install scapy") from None
        raise _NoLibpcap from None
    except OSError:  # scapy's bindings could not load libpcap
        raise _NoLibpcap from None
    handle = pcap.pcap_open_dead(dlt, SNAPLEN)
    if not handle:
        raise _NoLibpcap
    program = pcap.bpf_program()
    try:
        if pcap.pcap_compile(handle, ctypes.byref(program), expression.encode(), 1, -1) < 0:
            reason = pcap.pcap_geterr(handle).decode(errors="replace")
            raise LiveError(f"bad capture filter {expression!r}: {reason}")
        try:
            return [(i.code, i.jt, i.jf, i.k) for i in program.bf_insns[: program.bf_len]]
        finally:
            pcap.pcap_freecode(ctypes.byref(program))
    finally:
        pcap.pcap_close(handle)


def _compile_tcpdump(tcpdump: str, expression: str, dlt: int) -> Program:
    """`tcpdump -ddd` against an empty capture file of the right link type: no interface, no privileges."""
    with tempfile.NamedTemporaryFile(suffix=".pcap") as empty:
        empty.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_RAW if dlt == DLT_RAW else dlt))
        empty.flush()
        done = subprocess.run([tcpdump, "-ddd", "-r", empty.name, expression], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"tcpdump exited with {done.returncode}"
        raise LiveError(f"bad capture filter {expression!r}: {reason.removeprefix('tcpdump: ')}")
    lines = done.stdout.split("\n")
    count = int(lines[0])
    instructions = (line.split() for line in lines[1 : 1 + count])
    return [(int(code), int(jt), int(jf), int(k)) for code, jt, jf, k in instructions]


def drop_outgoing(program: Program) -> Program:
    """`program`, behind a prefix that rejects outgoing copies: `ld pkttype; jeq #OUTGOING; ret #0`."""
    return [(0x20, 0, 0, SKF_AD_PKTTYPE & 0xFFFFFFFF), (0x15, 0, 1, PACKET_OUTGOING), (0x06, 0, 0, 0), *program]


def _attach(sock: socket.socket, program: Program) -> None:
    instructions = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buffer = ctypes.create_string_buffer(instructions, len(instructions))
    fprog = struct.pack("HL", len(program), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


# --- the capture ---------------------------------------------------------------------------------------


@dataclass
class CaptureStats:
    packets: int = 0
    """Packets handed to the dissector."""
    bytes: int = 0
    """Their length on the wire."""
    kernel_drops: int = 0
    """Packets the kernel (or libpcap) dropped because kdissect did not read fast enough."""


class LiveCapture(Protocol):
    interface: str
    linktype: int
    expression: str
    stats: CaptureStats

    def fileno(self) -> int: ...

    def read(self, limit: int) -> list[Packet]:
        """Up to `limit` packets that are ready, without waiting (none when none is)."""

    def update_stats(self) -> None:
        """Refresh the kernel's drop count."""

    def close(self) -> None: ...


class PacketSocketCapture:
    """Linux: an AF_PACKET socket with the kernel filter attached before it receives anything."""

    def __init__(
        self, interface: str, expression: str, *, snaplen: int = SNAPLEN, promisc: bool = False, buffer_bytes: int = BUFFER_BYTES
    ) -> None:
        self.interface = interface
        self.expression = expression
        self.snaplen = snaplen
        self.stats = CaptureStats()
        any_device = interface == ANY
        if any_device:
            ifindex, hatype = 0, -1
        else:
            try:
                ifindex = socket.if_nametoindex(interface)
            except OSError:
                raise _unknown_interface(interface) from None
            hatype = _arphrd(interface)
        if hatype in (ARPHRD_ETHER, ARPHRD_LOOPBACK, ARPHRD_IEEE802):
            kind, self.linktype, dlt = socket.SOCK_RAW, LINKTYPE_ETHERNET, DLT_EN10MB
        elif hatype in (ARPHRD_NONE, ARPHRD_RAWIP):
            kind, self.linktype, dlt = socket.SOCK_RAW, LINKTYPE_RAW, DLT_RAW
        else:  # `any` and link layers kdissect does not read: cooked, the filter sees the network header
            kind, self.linktype, dlt = socket.SOCK_DGRAM, LINKTYPE_LINUX_SLL, DLT_RAW
        self._cooked = kind == socket.SOCK_DGRAM
        self._any = any_device
        self._loopbacks = _loopback_names() if any_device else frozenset()
        program = compile_bpf(expression, dlt) if expression else [(0x06, 0, 0, 0xFFFFFFFF)]
        if hatype == ARPHRD_LOOPBACK:
            program = drop_outgoing(program)
        try:
            # protocol 0: nothing is received until bind names one, so no packet slips past the filter; `any`
            # cannot be bound (Python names interfaces only), so it receives at once and is drained below
            sock = socket.socket(socket.AF_PACKET, kind, socket.htons(ETH_P_ALL) if any_device else 0)
        except PermissionError:
            raise _no_privileges(interface) from None
        except OSError as exc:
            raise LiveError(f"cannot open a packet socket: {exc.strerror or exc}") from None
        try:
            _attach(sock, program)
            self._buffer_with(sock, buffer_bytes)
            if promisc and not any_device:
                sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b""))
            if not any_device:
                try:
                    sock.bind((interface, ETH_P_ALL))
                except OSError as exc:
                    if exc.errno == errno.ENODEV:
                        raise _unknown_interface(interface) from None
                    raise
            sock.setblocking(False)
            if any_device:  # what came before the filter was attached
                while True:
                    try:
                        sock.recv(1)
                    except (BlockingIOError, InterruptedError):
                        break
        except LiveError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.EPERM, errno.EACCES):
                raise _no_privileges(interface) from None
            raise LiveError(f"cannot capture on {interface}: {exc.strerror or exc}") from None
        self._sock = sock
        self._index = 0

    def _buffer_with(self, sock: socket.socket, buffer_bytes: int) -> None:
        """The kernel's room for packets not read yet: the socket's receive buffer, and ancillary data with each packet."""
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, buffer_bytes)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_bytes)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        self._buffer = bytearray(self.snaplen)
        self._view = memoryview(self._buffer)

    def fileno(self) -> int:
        return self._sock.fileno()

    def read(self, limit: int) -> list[Packet]:
        recv = self._sock.recvmsg_into
        buffers = [self._buffer]
        view = self._view
        snaplen = self.snaplen
        cooked = self._cooked
        ethernet = self.linktype == LINKTYPE_ETHERNET
        loopbacks = self._loopbacks
        linktype = self.linktype
        stats = self.stats
        out: list[Packet] = []
        new = tuple.__new__
        while len(out) < limit:
            try:
                n, ancillary, _flags, address = recv(buffers, _ANC_SIZE, socket.MSG_TRUNC)
            except (BlockingIOError, InterruptedError):
                break
            if address[2] == PACKET_OUTGOING and address[0] in loopbacks:
                continue  # on `any`, loopback traffic comes twice; on a loopback interface the kernel drops the copy
            ts = 0
            wire = n
            vlan = None
            for level, kind, value in ancillary:
                if kind == SO_TIMESTAMPNS and level == socket.SOL_SOCKET:
                    sec, nsec = _TIMESPEC.unpack_from(value)
                    ts = sec * 1_000_000_000 + nsec
                elif kind == PACKET_AUXDATA and level == SOL_PACKET and len(value) >= _AUXDATA.size:
                    status, tp_len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(value)
                    wire = tp_len
                    if ethernet and (tci or status & TP_STATUS_VLAN_VALID):
                        vlan = _VLAN.pack(tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100, tci)
            data = bytes(view[: min(n, snaplen)])
            if vlan is not None and len(data) >= 12:
                data = data[:12] + vlan + data[12:]
                wire += 4
            elif cooked:
                _name, protocol, pkttype, hatype, hwaddr = address
                data = _SLL.pack(pkttype, hatype, len(hwaddr), hwaddr[:8], protocol) + data
                wire += _SLL.size
            if not ts:
                ts = time.time_ns()
            self._index += 1
            stats.packets += 1
            stats.bytes += wire
            out.append(new(Packet, (ts, linktype, data, wire, self._index, -1, 0)))
        return out

    def update_stats(self) -> None:
        try:
            _received, drops = struct.unpack_from("II", self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 12))
        except OSError:
            return
        self.stats.kernel_drops += drops  # reading the statistics resets them

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            self.update_stats()
            self._sock.close()


class RingCapture(PacketSocketCapture):
    """Linux: the same socket with a memory-mapped ring of blocks (TPACKET_V3) instead of one `recvmsg` per packet.

    The kernel fills a block with packets, each behind a `tpacket3_hdr` and its `sockaddr_ll`, and hands it over
    when it is full or `RETIRE_MS` after its first packet; the packets are read straight from the mapping and the
    block is given back. `buffer_bytes` is the ring's size, rounded to whole blocks.
    """

    BLOCK = 1 << 20
    """Bytes per block: a power of two pages, more than the largest packet (SNAPLEN) with its headers."""
    FRAME = 2048
    """The ring's nominal frame size (TPACKET_V3 stores packets at their own length; the kernel checks the count)."""
    RETIRE_MS = 10
    """A block with packets is handed over at the latest this long after its first: what a quiet capture waits."""
    _BLOCK_HEADER = struct.Struct("=IIIII")
    """tpacket_block_desc: version, offset_to_priv, then tpacket_hdr_v1's block_status, num_pkts, offset_to_first_pkt."""
    _PACKET = struct.Struct("=IIIIIIHHIIH")
    """tpacket3_hdr: next_offset, sec, nsec, snaplen, len, status, mac, net, rxhash, vlan_tci, vlan_tpid."""
    _ADDRESS = struct.Struct("=HHiHBB8s")
    """sockaddr_ll: family, protocol (big-endian), ifindex, hatype, pkttype, halen, addr."""
    _ADDRESS_AT = 48
    """TPACKET_ALIGN(sizeof(struct tpacket3_hdr)): where the sockaddr_ll follows the header."""

    def _buffer_with(self, sock: socket.socket, buffer_bytes: int) -> None:
        import mmap

        blocks = max(2, -(-buffer_bytes // self.BLOCK))
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
        request = struct.pack("=7I", self.BLOCK, blocks, self.FRAME, self.BLOCK // self.FRAME * blocks, self.RETIRE_MS, 0, 0)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, request)
        self._ring = mmap.mmap(sock.fileno(), self.BLOCK * blocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._blocks = blocks
        self._block = 0
        """The block being read (`_holding` while it is kdissect's), and within it the next packet and how many are left."""
        self._holding = False
        self._at = 0
        self._left = 0
        self._names = {index: name for index, name in socket.if_nameindex()} if self._any else {}

    def read(self, limit: int) -> list[Packet]:
        ring = self._ring
        out: list[Packet] = []
        stats = self.stats
        snaplen = self.snaplen
        linktype = self.linktype
        cooked = self._cooked
        ethernet = linktype == LINKTYPE_ETHERNET
        loopbacks = self._loopbacks
        unpack_packet, unpack_address, address_at = self._PACKET.unpack_from, self._ADDRESS.unpack_from, self._ADDRESS_AT
        new = tuple.__new__
        while len(out) < limit:
            if not self._left:
                if self._holding:  # the block just read goes back to the kernel
                    struct.pack_into("=I", ring, self._block * self.BLOCK + 8, TP_STATUS_KERNEL)
                    self._holding = False
                    self._block = (self._block + 1) % self._blocks
                base = self._block * self.BLOCK
                _version, _priv, status, count, first = self._BLOCK_HEADER.unpack_from(ring, base)
                if not status & TP_STATUS_USER:
                    break
                self._holding = True
                self._at, self._left = base + first, count
                continue
            at = self._at
            following, sec, nsec, captured, wire, status, mac, net, _hash, tci, tpid = unpack_packet(ring, at)
            self._left -= 1
            self._at = at + following
            _family, protocol, ifindex, hatype, pkttype, halen, hwaddr = unpack_address(ring, at + address_at)
            if pkttype == PACKET_OUTGOING and self._names.get(ifindex) in loopbacks:
                continue  # on `any`, loopback traffic comes twice (see PacketSocketCapture.read)
            start = at + (net if cooked else mac)
            data = ring[start : start + min(captured, snaplen)]
            if ethernet and (tci or status & TP_STATUS_VLAN_VALID) and len(data) >= 12:
                data = data[:12] + _VLAN.pack(tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100, tci) + data[12:]
                wire += 4
            elif cooked:
                data = _SLL.pack(pkttype, hatype, halen, hwaddr, socket.ntohs(protocol)) + data
                wire += _SLL.size
            self._index += 1
            stats.packets += 1
            stats.bytes += wire
            out.append(new(Packet, (sec * 1_000_000_000 + nsec, linktype, data, wire, self._index, -1, 0)))
        return out

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            self.update_stats()
            self._ring.close()
            self._sock.close()


def _arphrd(interface: str) -> int:
    try:
        with open(f"/sys/class/net/{interface}/type") as src:
            return int(src.read().strip())
    except (OSError, ValueError):
        return -1


def _loopback_names() -> frozenset[str]:
    return frozenset(name for name in interfaces() if _arphrd(name) == ARPHRD_LOOPBACK) or frozenset({"lo"})


class PcapCapture:
    """libpcap through scapy's ctypes bindings: for systems without AF_PACKET sockets."""

    def __init__(
        self, interface: str, expression: str, *, snaplen: int = SNAPLEN, promisc: bool = False, buffer_bytes: int = BUFFER_BYTES
    ) -> None:
        try:
            from scapy.libs import winpcapy as pcap
        except ImportError as exc:
            raise LiveError(f"scapy is not installed ({exc}): pip install scapy") from None
        except OSError:
            raise LiveError(f"live capture needs libpcap, which is missing: {INSTALL_HINT}") from None
        self._pcap, self._ctypes = pcap, ctypes
        self.interface = interface
        self.expression = expression
        self.stats = CaptureStats()
        self._index = 0
        errbuf = ctypes.create_string_buffer(pcap.PCAP_ERRBUF_SIZE)
        handle = pcap.pcap_create(interface.encode(), errbuf)
        if not handle:
            raise LiveError(f"cannot capture on {interface}: {errbuf.value.decode(errors='replace')}")
        lib = pcap._lib
        for setter, value in (
            ("pcap_set_snaplen", snaplen),
            ("pcap_set_promisc", int(promisc)),
            ("pcap_set_timeout", 100),
            ("pcap_set_buffer_size", buffer_bytes),
            ("pcap_set_immediate_mode", 1),
            ("pcap_set_tstamp_precision", 1),
        ):
            function = getattr(lib, setter, None)
            if function is not None:
                function(handle, value)
        status = lib.pcap_activate(handle)
        if status < 0:
            message = pcap.pcap_geterr(handle).decode(errors="replace")
            pcap.pcap_close(handle)
            if status == -8 or "permission" in message.lower() or "not permitted" in message.lower():  # PERM_DENIED
                raise _no_privileges(interface)
            if status == -5 or "no such device" in message.lower():  # NO_SUCH_DEVICE
                raise _unknown_interface(interface)
            raise LiveError(f"cannot capture on {interface}: {message}")
        self._handle = handle
        self.linktype = pcap.pcap_datalink(handle)
        nano = getattr(lib, "pcap_get_tstamp_precision", None)
        self._ns = bool(nano is not None and nano(handle) == 1)
        if expression:
            program = pcap.bpf_program()
            if (
                pcap.pcap_compile(handle, ctypes.byref(program), expression.encode(), 1, -1) < 0
                or pcap.pcap_setfilter(handle, ctypes.byref(program)) < 0
            ):
                message = pcap.pcap_geterr(handle).decode(errors="replace")
                self.close()
                raise LiveError(f"bad capture filter {expression!r}: {message}")
            pcap.pcap_freecode(ctypes.byref(program))
        pcap.pcap_setnonblock(handle, 1, errbuf)
        self._header = ctypes.POINTER(pcap.pcap_pkthdr)()
        self._data = ctypes.POINTER(ctypes.c_ubyte)()

    def fileno(self) -> int:
        return self._pcap.pcap_get_selectable_fd(self._handle)

    def read(self, limit: int) -> list[Packet]:
        pcap, ctypes = self._pcap, self._ctypes
        out: list[Packet] = []
        scale = 1 if self._ns else 1000
        while len(out) < limit:
            if pcap.pcap_next_ex(self._handle, ctypes.byref(self._header), ctypes.byref(self._data)) != 1:
                break
            header = self._header.contents
            data = ctypes.string_at(self._data, header.caplen)
            self._index += 1
            self.stats.packets += 1
            self.stats.bytes += header.len
            ts = header.ts.tv_sec * 1_000_000_000 + header.ts.tv_usec * scale
            out.append(tuple.__new__(Packet, (ts, self.linktype, data, header.len, self._index, -1, 0)))
        return out

    def update_stats(self) -> None:
        stat = self._pcap.pcap_stat()
        if self._pcap.pcap_stats(self._handle, self._ctypes.byref(stat)) == 0:
            self.stats.kernel_drops = stat.ps_drop + stat.ps_ifdrop

    def close(self) -> None:
        if self._handle is not None:
            self.update_stats()
            self._pcap.pcap_close(self._handle)
            self._handle = None


BACKENDS = ("ring", "socket", "libpcap")


def open_live(
    interface: str,
    expression: str,
    *,
    promisc: bool = False,
    snaplen: int = SNAPLEN,
    backend: str | None = None,
    buffer_bytes: int = BUFFER_BYTES,
) -> LiveCapture:
    """Start capturing on `interface` with the BPF `expression` ("" for everything).

    `backend`: "ring" (a TPACKET_V3 ring on a Linux packet socket: the default there), "socket" (the same socket
    read one `recvmsg` at a time) or "libpcap" (the default elsewhere). `buffer_bytes`: what the kernel may hold
    for kdissect while it is busy (the ring, the socket's buffer, libpcap's). Raises `LiveError` with a message for
    the user when the capture cannot start.
    """
    if backend is None:
        backend = "ring" if sys.platform.startswith("linux") else "libpcap"
    if backend == "ring":
        return RingCapture(interface, expression, snaplen=snaplen, promisc=promisc, buffer_bytes=buffer_bytes)
    if backend == "socket":
        return PacketSocketCapture(interface, expression, snaplen=snaplen, promisc=promisc, buffer_bytes=buffer_bytes)
    return PcapCapture(interface, expression, snaplen=snaplen, promisc=promisc, buffer_bytes=buffer_bytes)
