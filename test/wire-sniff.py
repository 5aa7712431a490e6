#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Read every address the RDMA traffic of a guest's NIC carries.

  wire-sniff.py IFACE OUT

Captures every frame of IFACE (an AF_PACKET socket, both directions) until
SIGTERM or SIGINT, then writes OUT: one line "KIND COUNT" per kind of
address field seen, and one line "addr KIND 0xADDR" per address field.
Kinds:
  roce-reth     RoCEv2 (UDP 4791): the RETH of an RDMA WRITE (first or
                only) or READ request, the target's address
  roce-atomic   RoCEv2: the AtomicETH of a compare-swap or fetch-add
  iwarp-tagged  iWARP (an MPA stream on TCP): a tagged DDP segment's TO
                (an RDMA WRITE's target, a READ response's sink)
  iwarp-sink    iWARP: a READ request's sink TO, the requester's own
                buffer, which the peer writes the data back to
  iwarp-source  iWARP: a READ request's source TO
A TCP stream is taken apart from its first byte (its SYN is needed) as MPA
(RFC 5044: request or reply frame, then FPDUs, each with its CRC field) and
DDP/RDMAP (RFC 5041, 5040).  "dropped N" says how many frames the socket
lost, "unparsed N" how many MPA streams could not be read to their end.
Used by test/guest/wire.sh.
"""
import os
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
ROCE_PORT = 4791
SO_RCVBUFFORCE = 33

stop = False


def on_signal(_sig, _frame):
    global stop
    stop = True


def be64(b, off):
    return struct.unpack_from(">Q", b, off)[0]


def tcp_segment(frame, streams):
    """IPv4/TCP: keep the payload by its direction and sequence number."""
    ihl = (frame[14] & 0x0F) * 4
    t = 14 + ihl
    if len(frame) < t + 20:
        return
    sport, dport, seq = struct.unpack_from(">HHI", frame, t)
    doff = (frame[t + 12] >> 4) * 4
    flags = frame[t + 13]
    total = struct.unpack_from(">H", frame, 16)[0]
    # tot_len bounds it (a short frame's padding); 0 in a BIG TCP skb.
    end = 14 + total if total else len(frame)
    payload = bytes(frame[t + doff:end])
    src, dst = bytes(frame[26:30]), bytes(frame[30:34])
    st = streams.setdefault((src, sport, dst, dport), {"isn": None, "segs": []})
    if flags & 0x02:  # SYN: data starts at seq + 1
        st["isn"] = (seq + 1) & 0xFFFFFFFF
    elif payload:
        st["segs"].append((seq, payload))


def roce_packet(frame, ihl, addrs):
    u = 14 + ihl
    bth = u + 8
    if len(frame) < bth + 12:
        return
    op = frame[bth]
    # RC: RDMA WRITE first/only (with imm), READ request: RETH.
    if op in (0x06, 0x0A, 0x0B, 0x0C) and len(frame) >= bth + 28:
        addrs.append(("roce-reth", be64(frame, bth + 12)))
    # RC: compare-swap, fetch-add: AtomicETH.
    elif op in (0x13, 0x14) and len(frame) >= bth + 40:
        addrs.append(("roce-atomic", be64(frame, bth + 12)))


def stream_bytes(st):
    """The stream's bytes from its first one, up to the first hole."""
    if st["isn"] is None:
        return None
    isn = st["isn"]
    data = {}
    for seq, p in st["segs"]:
        off = (seq - isn) & 0xFFFFFFFF
        if off >= 1 << 31:  # before the first byte: a retransmit
            continue
        if len(data.get(off, b"")) < len(p):
            data[off] = p
    out = bytearray()
    for off in sorted(data):
        p = data[off]
        if off > len(out):
            break
        out += p[len(out) - off:]
    return bytes(out)


MPA_REQ = b"MPA ID Req Frame"
MPA_REP = b"MPA ID Rep Frame"


def mpa_start(b):
    """Offset of the first FPDU and the frame's flags, or None."""
    if len(b) < 20 or b[:16] not in (MPA_REQ, MPA_REP):
        return None
    pdlen = struct.unpack_from(">H", b, 18)[0]
    return 20 + pdlen, b[16]


def fpdus(b, off, crc):
    """Every FPDU's ULPDU from @off, or None where the framing breaks."""
    out = []
    while off < len(b):
        if off + 2 > len(b):
            return out, False
        n = struct.unpack_from(">H", b, off)[0]
        u = b[off + 2:off + 2 + n]
        if len(u) < n:
            return out, False  # the capture ends inside it
        if n < 14 or u[0] & 0x03 != 1 or u[1] >> 6 != 1:
            return None, False  # not DDP version 1 / RDMAP version 1
        out.append(u)
        off += 2 + n
        off += (-(2 + n)) % 4 + crc
    return out, True


def iwarp_addrs(ulpdus, addrs):
    for u in ulpdus:
        op = u[1] & 0x0F
        if u[0] & 0x80:  # tagged: STag, TO
            addrs.append(("iwarp-tagged", be64(u, 6)))
        elif op == 1 and len(u) >= 18 + 28:  # READ request
            addrs.append(("iwarp-sink", be64(u, 18 + 4)))
            addrs.append(("iwarp-source", be64(u, 18 + 20)))


def main():
    iface, out = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    # Root: past net.core.rmem_max, so that a burst is not dropped.
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.bind((iface, 0))
    s.settimeout(0.2)
    # Ready: the caller starts its traffic once this file is there.
    with open(out + ".ready", "w") as f:
        f.write("1\n")
    addrs, streams = [], {}
    while not stop:
        try:
            frame = s.recv(65600)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ihl = (frame[14] & 0x0F) * 4
        proto = frame[23]
        if proto == 6:
            tcp_segment(frame, streams)
        elif proto == 17 and len(frame) >= 14 + ihl + 8:
            dport = struct.unpack_from(">H", frame, 14 + ihl + 2)[0]
            if dport == ROCE_PORT:
                roce_packet(frame, ihl, addrs)
    stats = s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    dropped = struct.unpack("II", stats)[1]
    # The two directions of a TCP connection: an MPA request one way, a
    # reply the other; markers in either direction are not taken apart.
    starts = {}
    for key, st in streams.items():
        b = stream_bytes(st)
        m = mpa_start(b) if b else None
        if m:
            starts[key] = (b, m[0], m[1])
    unparsed = 0
    for (src, sport, dst, dport), (b, off, flags) in starts.items():
        other = starts.get((dst, dport, src, sport))
        oflags = other[2] if other else 0
        if (flags | oflags) & 0x80:
            unparsed += 1  # markers: not taken apart here
            continue
        # The CRC field is always there, zero when CRCs are off (RFC 5044;
        # siw_prepare_fpdu()).
        ulpdus, whole = fpdus(b, off, 4)
        if ulpdus is None:
            unparsed += 1
            continue
        if not whole:
            unparsed += 1
        iwarp_addrs(ulpdus, addrs)
    kinds = {}
    for k, _ in addrs:
        kinds[k] = kinds.get(k, 0) + 1
    with open(out + ".tmp", "w") as f:
        for k in ("roce-reth", "roce-atomic", "iwarp-tagged", "iwarp-sink",
                  "iwarp-source"):
            f.write("%s %d\n" % (k, kinds.get(k, 0)))
        f.write("dropped %d\n" % dropped)
        f.write("unparsed %d\n" % unparsed)
        f.write("mpa-streams %d\n" % len(starts))
        for k, a in addrs:
            f.write("addr %s 0x%016x\n" % (k, a))
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()
