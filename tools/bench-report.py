#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The table of `make bench` (tools/bench): reads the bench.tsv each boot's
guest A wrote (test/bench-guest.sh), prints krdma, perftest and the
krdma/perftest ratio per cell, and writes results.json and results.md.
The block section (test/bench-blk-guest.sh, every boot): from
bench-blk.tsv and fio's JSON in bench-blk/, null_blk, nvme-rdma and
krdma-blk per cell with the krdma-blk/nvme-rdma ratio; a cell whose run
failed reads "failed".
The scatter-gather section (test/bench-sg-guest.sh, one-guest boots):
from bench-sg.tsv, per op a table over block size and block count of the
message rate gathered (N SGEs) and packed (a CPU copy into one buffer),
with pack/gather, and per block size the smallest count from which the
copy is the slower.

  bench-report.py --out DIR [--secs N] [--sections "rdma blk sg"]
                  LINE:TOPO:RELEASE:LABDIR ...
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import sys

SIZES = {64: "64 B", 4096: "4 KiB", 65536: "64 KiB", 1048576: "1 MiB"}
# (test prefix, metric, row title, lower is better)
ROWS = [
    ("bw", "bw_mibs", "bandwidth MiB/s", False),
    ("bw", "msg_rate", "message rate op/s", False),
    ("lat", "p50_us", "latency p50 us", True),
    ("lat", "p99_us", "latency p99 us", True),
]
# The block section: (fio job, direction, metric, row title, lower is better)
BLK_ROWS = [
    ("randread-4k-qd32", "read", "iops", "4 KiB random read, QD32, IOPS", False),
    ("randwrite-4k-qd32", "write", "iops", "4 KiB random write, QD32, IOPS", False),
    ("read-128k-qd8", "read", "bw_mibs", "128 KiB seq. read, QD8, MiB/s", False),
    ("write-128k-qd8", "write", "bw_mibs", "128 KiB seq. write, QD8, MiB/s", False),
    ("randread-4k-qd1", "read", "lat_mean_us", "4 KiB random read, QD1, mean us", True),
    ("randread-4k-qd1", "read", "lat_p99_us", "4 KiB random read, QD1, p99 us", True),
    # io_uring --hipri on each target's poll queue
    ("randread-4k-qd1-hipri", "read", "lat_mean_us",
     "4 KiB rand. read QD1 polled, mean us", True),
    ("randread-4k-qd1-hipri", "read", "lat_p99_us",
     "4 KiB rand. read QD1 polled, p99 us", True),
]
# krdma's two runs of a cell: the interrupt-driven connection and the
# polled one (poll=1), as test/bench-guest.sh records them.
MODES = [("irq", "krdma"), ("poll", "krdma_poll")]
# perftest 4.5 has no write-with-immediate: krdma's imm (a WRITE and its
# notice) is set against perftest's plain WRITE of the same size, so its
# ratio is what the notice costs on top of the transfer.
IMM_NOTE = ("imm: krdma's RDMA WRITE followed by a write-with-immediate "
            "notice, against perftest's plain WRITE of the same size "
            "(perftest 4.5 has no write-with-immediate)")
BLK_TARGETS = ["null_blk", "nvme-rdma", "krdma-blk", "krdma-blk-wq",
               "nvme-rdma-noinline", "krdma-blk-nocapsule",
               "krdma-blk-hipri"]
# Cells of these must be there; krdma-blk-wq (the server's completions in
# the completion workqueue, export word "wq"), nvme-rdma-noinline,
# krdma-blk-nocapsule (no write data in the command) and krdma-blk-hipri
# (a lone command's work on the CPU's high-priority worker) only when the
# guest ran them.
BLK_REQUIRED = ["null_blk", "nvme-rdma", "krdma-blk"]
TOPOS = {"single": "one guest, rxe loopback",
         "pair": "two guests, A -> B over a qemu UDP link"}


def topo_name(topo, lab):
    """The boot's description; a pair says which link joined it (the
    KRDMA_NET guest-run passed to the guests, udp by default)."""
    if topo != "pair":
        return TOPOS.get(topo, topo)
    try:
        with open(os.path.join(lab, "env-A")) as f:
            if "export KRDMA_NET=stream" in f.read().split("\n"):
                return ("two guests, A -> B over a qemu stream link "
                        "(loses no frame)")
    except OSError:
        pass
    return TOPOS["pair"]


def size_name(s):
    return SIZES.get(s, f"{s} B")


def load(path):
    vals = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 5:
                    continue
                test, size, tool, metric, value = parts
                try:
                    vals[(test, int(size), tool, metric)] = float(value)
                except ValueError:
                    pass
    except OSError:
        pass
    return vals


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def boot_cells(vals):
    cells = []
    sizes = sorted({k[1] for k in vals if k[0] != "memcpy" and k[0] != "info"})
    ops = [op for op in ("write", "read", "send", "imm", "fadd", "cas")
           if any(k[0].startswith(op + "_") for k in vals)]
    for kind, metric, title, lower in ROWS:
        for op in ops:
            for mode, tool in MODES:
                for s in sizes:
                    test = f"{op}_{kind}"
                    k = vals.get((test, s, tool, metric))
                    p = vals.get((test, s, "perftest", metric))
                    if k is None:
                        continue
                    ratio = k / p if p else None
                    cells.append({"test": test, "op": op, "size": s,
                                  "mode": mode, "metric": metric,
                                  "title": title, "lower_is_better": lower,
                                  "krdma": k, "perftest": p,
                                  "ratio": ratio})
    return sizes, ops, cells


def table(boot, sizes, ops, cells, md):
    """Rows: metric x op; columns: sizes; cell: krdma / perftest (ratio)."""
    lines = []
    head = ["metric", "op"] + [size_name(s) for s in sizes]
    if md:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{head[0]:<22}{head[1]:<12}" +
                     "".join(f"{h:>26}" for h in head[2:]))
    by = {(c["metric"], c["op"], c["mode"], c["size"]): c for c in cells}
    for kind, metric, title, lower in ROWS:
        for op, mode in [(o, m) for o in ops for m, _ in MODES]:
            row = []
            for s in sizes:
                c = by.get((metric, op, mode, s))
                if not c:
                    row.append("-")
                    continue
                r = f"{c['ratio']:.2f}x" if c["ratio"] is not None else "-"
                row.append(f"{fmt(c['krdma'])} / {fmt(c['perftest'])} ({r})")
            if all(x == "-" for x in row):
                continue
            t = title + (" (lower is better)" if lower and md else "")
            o = op + ("*" if op == "imm" else "")
            o = o if mode == "irq" else f"{o} polled"
            if md:
                lines.append(f"| {t} | {o} | " + " | ".join(row) + " |")
            else:
                lines.append(f"{title:<22}{o:<12}" +
                             "".join(f"{x:>26}" for x in row))
    if "imm" in ops:
        lines.append("")
        lines.append("* " + IMM_NOTE)
    return lines


def fio_metric(path, direction, metric):
    """One number from fio's JSON output, or None."""
    try:
        with open(path) as f:
            text = f.read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    d = job.get(direction, {})
    if job.get("error") or not d.get("total_ios"):
        return None
    if metric == "iops":
        return d.get("iops")
    if metric == "bw_mibs":
        return d.get("bw_bytes", 0) / 1048576.0
    lat = d.get("lat_ns", {})
    if metric == "lat_mean_us":
        return lat.get("mean", 0) / 1000.0 or None
    if metric == "lat_p99_us":
        for key in ("lat_ns", "clat_ns"):
            p = d.get(key, {}).get("percentile", {}).get("99.000000")
            if p:
                return p / 1000.0
    return None


def fio_runs(lab, target, job):
    """fio's JSON files of a cell, one per run (TARGET-JOB-rN.json; a lab
    from before the runs has TARGET-JOB.json)."""
    d = os.path.join(lab, "bench-blk")
    runs = sorted(glob.glob(os.path.join(d, f"{target}-{job}-r*.json")),
                  key=lambda f: int(f.rsplit("-r", 1)[1][:-5]))
    return runs or [os.path.join(d, f"{target}-{job}.json")]


def blk_cells(lab):
    """The block section of one boot: (info, cells), or (None, None) when
    its guest script never wrote its table."""
    status, info = {}, {}
    try:
        with open(os.path.join(lab, "bench-blk.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 4:
                    continue
                if parts[0] == "info":
                    info[f"{parts[1]}_{parts[2]}"] = parts[3]
                else:
                    status[(parts[0], parts[1])] = (parts[2], parts[3])
    except OSError:
        return None, None
    cells = []
    ran = [t for t in BLK_TARGETS
           if t in BLK_REQUIRED or any(k[0] == t for k in status)]
    for job, direction, metric, title, lower in BLK_ROWS:
        c = {"job": job, "metric": metric, "title": title,
             "lower_is_better": lower, "targets": ran}
        for t in ran:
            st, why = status.get((t, job), ("failed", "not run"))
            v = None
            if why.startswith("idle="):
                c.setdefault("guest_idle_pct", {})[t] = int(why[5:])
            if st == "ok":
                runs = [fio_metric(f, direction, metric)
                        for f in fio_runs(lab, t, job)]
                v = None
                if runs and None not in runs:
                    v = statistics.median(runs)
                    c.setdefault("runs", {})[t] = runs
                else:
                    why = "no result in fio's output"
            c[t] = v
            if v is None:
                c.setdefault("failed", {})[t] = why
        k, n = c["krdma-blk"], c["nvme-rdma"]
        c["ratio"] = k / n if k is not None and n else None
        if c["ratio"] is not None:
            c["goal_met"] = c["ratio"] <= 1 if lower else c["ratio"] >= 1
        cells.append(c)
    return info, cells


def blk_table(cells, md):
    """Rows: the fio cells; columns: the three targets and the ratio."""
    targets = cells[0]["targets"] if cells else BLK_REQUIRED
    head = ["fio job"] + targets + ["krdma-blk/nvme-rdma"]
    lines = []
    if md:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{head[0]:<34}" +
                     "".join(f"{h:>{max(12, len(h) + 2)}}"
                             for h in head[1:-1]) + f"{head[-1]:>22}")
    for c in cells:
        vals = [fmt(c[t]) if c[t] is not None else "failed"
                for t in targets]
        r = f"{c['ratio']:.2f}x" if c["ratio"] is not None else "-"
        t = c["title"] + (" (lower is better)" if c["lower_is_better"] and md
                          else "")
        if md:
            lines.append(f"| {t} | " + " | ".join(vals) + f" | {r} |")
        else:
            lines.append(f"{t:<34}" +
                         "".join(f"{v:>{max(12, len(h) + 2)}}"
                                 for v, h in zip(vals, head[1:-1])) +
                         f"{r:>22}")
    return lines


def rdma_boot(result, text, md, line, topo, rel, lab):
    """krdma against perftest in one boot: its table into text and md, its
    cells into result; 1 when it has none."""
    vals = load(os.path.join(lab, "bench.tsv"))
    sizes, ops, cells = boot_cells(vals)
    memcpy = vals.get(("memcpy", 67108864, "memcpy", "bw_mibs"))
    depth = vals.get(("info", 0, "krdma", "queue_depth"))
    batch = vals.get(("info", 0, "krdma", "batch"))
    boot = {"line": line, "kernel": rel, "topo": topo,
            "description": topo_name(topo, lab),
            "memcpy_mibs": memcpy, "depth": depth, "batch": batch,
            "cells": cells}
    result["boots"].append(boot)
    title = f"{rel}, {topo_name(topo, lab)}"
    extra = []
    if memcpy:
        extra.append(f"memcpy in the guest: {memcpy:.0f} MiB/s")
    if depth:
        extra.append(f"{depth:.0f} operations in flight in bandwidth runs")
    if batch:
        extra.append(f"krdma write/read posted {batch:.0f} at a time")
    text.append("")
    text.append(f"== {title}" + (f" ({'; '.join(extra)})" if extra else ""))
    md.append("")
    md.append(f"{title}" + (f" ({'; '.join(extra)})" if extra else "") + ":")
    md.append("")
    if not cells:
        text.append("   no results (see the guest logs)")
        md.append("no results")
        return 1
    text += table(boot, sizes, ops, cells, False)
    md += table(boot, sizes, ops, cells, True)
    # The targets, per boot.
    def ratios(metric, pred, mode, ops=("write", "read", "send")):
        return [c["ratio"] for c in cells if c["metric"] == metric and
                c["mode"] == mode and c["ratio"] is not None and
                c["op"] in ops and pred(c["size"])]
    summary = []
    for mode, _ in MODES:
        r64 = ratios("msg_rate", lambda s: s == 64, mode)
        rbig = ratios("bw_mibs", lambda s: s >= 65536, mode)
        l64 = ratios("p50_us", lambda s: s == 64, mode)
        how = "" if mode == "irq" else " polled"
        if r64:
            summary.append(f"message rate at 64 B{how}: krdma/perftest %s" %
                           ", ".join(f"{r:.2f}" for r in r64))
        if rbig:
            summary.append(f"bandwidth at >= 64 KiB{how}: median "
                           f"krdma/perftest {statistics.median(rbig):.2f} "
                           f"(min {min(rbig):.2f})")
        if l64:
            summary.append(f"latency p50 at 64 B{how}: krdma/perftest %s" %
                           ", ".join(f"{r:.2f}" for r in l64))
        ri = ratios("msg_rate", lambda s: s == 64, mode, ("imm",))
        if ri:
            summary.append(f"write-with-imm message rate at 64 B{how}: "
                           "krdma/perftest write %s" %
                           ", ".join(f"{r:.2f}" for r in ri))
        # The atomics run at their one size, 8 B (fadd, then cas).
        ra = ratios("msg_rate", lambda s: s == 8, mode, ("fadd", "cas"))
        la = ratios("p50_us", lambda s: s == 8, mode, ("fadd", "cas"))
        if ra:
            summary.append(f"atomics (fadd, cas) message rate{how}: "
                           "krdma/perftest %s" %
                           ", ".join(f"{r:.2f}" for r in ra))
        if la:
            summary.append(f"atomics (fadd, cas) latency p50{how}: "
                           "krdma/perftest %s" %
                           ", ".join(f"{r:.2f}" for r in la))
    boot["summary"] = summary
    for s in summary:
        text.append("   " + s)
    if summary:
        md.append("")
        md += ["- " + s for s in summary]
    return 0


def blk_boot(result, text, md, line, topo, rel, lab):
    """The block section of one boot: its table into text and md, its cells
    into result["blk"]; 1 when a cell failed or the section never ran."""
    info, cells = blk_cells(lab)
    if topo == "pair":
        title = (f"block: {rel}, {topo_name(topo, lab)}; B serves its "
                 "null_blk by nvme-rdma and by krdma-blk, A runs fio (and "
                 "on its own null_blk, the bound)")
    else:
        title = (f"block: {rel}, {TOPOS['single']}; fio on null_blk, on "
                 "nvme-rdma and on krdma-blk over the same null_blk")
    text.append("")
    md.append("")
    if cells is None:
        text.append(f"== {title}")
        text.append("   no results (see the guest logs)")
        md.append(f"{title}:")
        md.append("")
        md.append("no results")
        result.setdefault("blk", []).append(
            {"line": line, "kernel": rel, "topo": topo, "cells": None})
        return 1
    extra = []
    if info.get("fio_secs"):
        extra.append(f"{info['fio_secs']} s per job")
    if info.get("fio_runs"):
        extra.append(f"the median of {info['fio_runs']} runs")
    if info.get("null_blk_size"):
        extra.append(f"on the first {info['null_blk_size']}")
    if info.get("blk_queues"):
        extra.append(f"{info['blk_queues']} queues")
    if info.get("fio_version"):
        extra.append(info["fio_version"])
    head = title + (f" ({'; '.join(extra)})" if extra else "")
    text.append(f"== {head}")
    md.append(f"{head}:")
    md.append("")
    text += blk_table(cells, False)
    md += blk_table(cells, True)
    rated = [c for c in cells if c["ratio"] is not None]
    failed = [f"{c['title']} on {t}: {why}" for c in cells
              for t, why in c.get("failed", {}).items()]
    summary = [f"krdma-blk at least as good as nvme-rdma in "
               f"{sum(c['goal_met'] for c in rated)} of {len(cells)} cells"]
    idle = []
    for t in cells[0]["targets"]:
        v = [c["guest_idle_pct"][t] for c in cells
             if t in c.get("guest_idle_pct", {})]
        if v:
            idle.append(f"{t} {min(v)} to {max(v)}%")
    if idle:
        summary.append("guest CPU idle while fio ran: " + ", ".join(idle))
    if cells and "krdma-blk-wq" in cells[0]["targets"]:
        r = [f"{c['krdma-blk-wq'] / c['krdma-blk']:.2f}"
             if c["krdma-blk"] and c["krdma-blk-wq"] else "-"
             for c in cells]
        summary.append("krdma-blk-wq/krdma-blk (the server's completions "
                       "in the completion workqueue against softirq and a "
                       "work item), cell by cell: " + ", ".join(r))
    summary += ["failed: " + f for f in failed]
    for x in summary:
        text.append("   " + x)
    md.append("")
    md += ["- " + x for x in summary]
    result.setdefault("blk", []).append(
        {"line": line, "kernel": rel, "topo": topo,
         "description": topo_name(topo, lab), "info": info, "cells": cells,
         "summary": summary})
    return 1 if failed else 0


def sg_cells(lab):
    """bench-sg.tsv: ({info}, {(op, size, n, mode): {metric: value}})."""
    info, cells = {}, {}
    try:
        with open(os.path.join(lab, "bench-sg.tsv")) as f:
            for line in f:
                p = line.rstrip("\n").split("\t")
                if len(p) != 6:
                    continue
                try:
                    v = float(p[5])
                except ValueError:
                    continue
                if p[0] == "info":
                    info[p[4]] = int(v)
                    continue
                key = (p[0][3:], int(p[1]), int(p[2]), p[3])
                cells.setdefault(key, {})[p[4]] = v
    except OSError:
        return None, None
    return info, cells


def sg_boot(result, text, md, line, rel, lab):
    """The scatter-gather section of one boot; 1 when it has no results."""
    info, cells = sg_cells(lab)
    title = (f"scatter-gather: {rel}, one guest, rxe loopback; N blocks of "
             "B bytes, 2B apart, as one message or write: gathered by N "
             "SGEs or packed by the CPU into one buffer")
    text.append("")
    md.append("")
    if not cells:
        text.append(f"== {title}")
        text.append("   no results (see the guest logs)")
        md += [f"{title}:", "", "no results"]
        result.setdefault("sg", []).append(
            {"line": line, "kernel": rel, "cells": None})
        return 1
    extra = [f"{k} {v}" for k, v in sorted(info.items())]
    head = title + (f" ({', '.join(extra)})" if extra else "")
    text.append(f"== {head}")
    md += [f"{head}:", ""]
    ops = sorted({k[0] for k in cells}, key=["send", "write"].index)
    sizes = sorted({k[1] for k in cells})
    counts = sorted({k[2] for k in cells})
    out = []
    summary = []
    for op in ops:
        hdr = ["op", "B"] + [f"N={n} gather / pack (pack/gather)"
                             for n in counts]
        rows = []
        for b in sizes:
            row = [op, size_name(b)]
            cross = None
            for n in counts:
                g = cells.get((op, b, n, "gather"), {}).get("msg_rate")
                pk = cells.get((op, b, n, "pack"), {}).get("msg_rate")
                r = pk / g if g and pk else None
                row.append(f"{fmt(g)} / {fmt(pk)} "
                           f"({'-' if r is None else f'{r:.2f}'})")
                out.append({"op": op, "block": b, "n": n,
                            "gather": cells.get((op, b, n, "gather")),
                            "pack": cells.get((op, b, n, "pack")),
                            "pack_over_gather": r})
                if r is not None and n > 1 and r < 1 and cross is None:
                    cross = n
            rows.append(row)
            summary.append(f"{op} {size_name(b)}: packing is slower than "
                           f"gathering from N={cross}" if cross else
                           f"{op} {size_name(b)}: packing never slower than "
                           f"gathering (N up to {counts[-1]})")
        widths = [max(len(str(r[i])) for r in rows + [hdr])
                  for i in range(len(hdr))]
        text.append("  ".join(h.ljust(w) for h, w in zip(hdr, widths)))
        for r in rows:
            text.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
        text.append("")
        md.append("| " + " | ".join(hdr) + " |")
        md.append("|" + "---|" * len(hdr))
        for r in rows:
            md.append("| " + " | ".join(str(c) for c in r) + " |")
        md.append("")
    text.append("   cells: message rate op/s, gathered / packed "
                "(packed/gathered)")
    for x in summary:
        text.append("   " + x)
    md += ["- " + x for x in summary]
    result.setdefault("sg", []).append(
        {"line": line, "kernel": rel, "info": info, "cells": out,
         "summary": summary})
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--secs", type=int, default=0)
    ap.add_argument("--sections", default="rdma blk")
    ap.add_argument("boots", nargs="+")
    a = ap.parse_args()

    now = datetime.datetime.now().astimezone()
    result = {"date": now.isoformat(timespec="seconds"),
              "host_cpus": os.cpu_count(), "accel": "tcg",
              "wall_seconds": a.secs, "boots": []}
    text, md = [], []
    sections = a.sections.split()
    what = "krdma bench vs perftest" if "rdma" in sections else "krdma bench"
    text.append(f"{what}, rxe, {now:%Y-%m-%d}; qemu TCG, "
                f"host with {os.cpu_count()} cores")
    md.append(f"Measured {now:%Y-%m-%d} by `make bench`, under qemu TCG on a "
              f"{os.cpu_count()}-core host.")
    if "rdma" in sections:
        text.append("cells: krdma / perftest (krdma/perftest); latency: "
                    "lower is better")
        md[-1] += ("  Each cell: krdma / perftest (krdma/perftest ratio); "
                   "for latency lower is better.")
    if "blk" in sections:
        text.append("block: fio (direct, libaio, one job; polled: "
                    "io_uring --hipri on a poll queue) per target; "
                    "krdma-blk/nvme-rdma ratio; latency: lower is better")
        md[-1] += ("  Block: fio (direct=1, libaio, one job; the polled "
                   "rows io_uring with --hipri on the target's poll queue) "
                   "on each target; the ratio is krdma-blk/nvme-rdma, for "
                   "latency lower is better.")
    missing = 0
    for b in a.boots:
        line, topo, rel, lab = b.split(":", 3)
        if "rdma" in sections:
            missing += rdma_boot(result, text, md, line, topo, rel, lab)
        if "blk" in sections:
            missing += blk_boot(result, text, md, line, topo, rel, lab)
        if "sg" in sections and topo == "single":
            missing += sg_boot(result, text, md, line, rel, lab)
    if a.secs:
        text.append("")
        text.append(f"(make bench took {a.secs // 60} min {a.secs % 60} s)")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(text))
    print(f"\nwrote {a.out}/results.json and {a.out}/results.md")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
