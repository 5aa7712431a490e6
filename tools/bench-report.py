#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The table of `make bench` (tools/bench): reads the bench.tsv each boot's
guest A wrote (test/bench-guest.sh), prints krdma, perftest and the
krdma/perftest ratio per cell, and writes results.json and results.md.

  bench-report.py --out DIR [--secs N] LINE:TOPO:RELEASE:LABDIR ...
"""
import argparse
import datetime
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
TOPOS = {"single": "one guest, rxe loopback",
         "pair": "two guests, A -> B over a qemu UDP link"}


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
    ops = [op for op in ("write", "read", "send")
           if any(k[0].startswith(op + "_") for k in vals)]
    for kind, metric, title, lower in ROWS:
        for op in ops:
            for s in sizes:
                test = f"{op}_{kind}"
                k = vals.get((test, s, "krdma", metric))
                p = vals.get((test, s, "perftest", metric))
                if k is None and p is None:
                    continue
                ratio = k / p if k is not None and p else None
                cells.append({"test": test, "op": op, "size": s,
                              "metric": metric, "title": title,
                              "lower_is_better": lower, "krdma": k,
                              "perftest": p, "ratio": ratio})
    return sizes, ops, cells


def table(boot, sizes, ops, cells, md):
    """Rows: metric x op; columns: sizes; cell: krdma / perftest (ratio)."""
    lines = []
    head = ["metric", "op"] + [size_name(s) for s in sizes]
    if md:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{head[0]:<22}{head[1]:<6}" +
                     "".join(f"{h:>26}" for h in head[2:]))
    by = {(c["metric"], c["op"], c["size"]): c for c in cells}
    for kind, metric, title, lower in ROWS:
        for op in ops:
            row = []
            for s in sizes:
                c = by.get((metric, op, s))
                if not c:
                    row.append("-")
                    continue
                r = f"{c['ratio']:.2f}x" if c["ratio"] is not None else "-"
                row.append(f"{fmt(c['krdma'])} / {fmt(c['perftest'])} ({r})")
            if all(x == "-" for x in row):
                continue
            t = title + (" (lower is better)" if lower and md else "")
            if md:
                lines.append(f"| {t} | {op} | " + " | ".join(row) + " |")
            else:
                lines.append(f"{title:<22}{op:<6}" +
                             "".join(f"{x:>26}" for x in row))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--secs", type=int, default=0)
    ap.add_argument("boots", nargs="+")
    a = ap.parse_args()

    now = datetime.datetime.now().astimezone()
    result = {"date": now.isoformat(timespec="seconds"),
              "host_cpus": os.cpu_count(), "accel": "tcg",
              "wall_seconds": a.secs, "boots": []}
    text, md = [], []
    text.append(f"krdma bench vs perftest, rxe, {now:%Y-%m-%d}; qemu TCG, "
                f"host with {os.cpu_count()} cores")
    text.append("cells: krdma / perftest (krdma/perftest); latency: lower "
                "is better")
    md.append(f"Measured {now:%Y-%m-%d} by `make bench`, under qemu TCG on a "
              f"{os.cpu_count()}-core host.  Each cell: krdma / perftest "
              "(krdma/perftest ratio); for latency lower is better.")
    missing = 0
    for b in a.boots:
        line, topo, rel, lab = b.split(":", 3)
        vals = load(os.path.join(lab, "bench.tsv"))
        sizes, ops, cells = boot_cells(vals)
        memcpy = vals.get(("memcpy", 67108864, "memcpy", "bw_mibs"))
        depth = vals.get(("info", 0, "krdma", "queue_depth"))
        batch = vals.get(("info", 0, "krdma", "batch"))
        boot = {"line": line, "kernel": rel, "topo": topo,
                "description": TOPOS.get(topo, topo),
                "memcpy_mibs": memcpy, "depth": depth, "batch": batch,
                "cells": cells}
        result["boots"].append(boot)
        title = f"{rel}, {TOPOS.get(topo, topo)}"
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
            missing += 1
            continue
        text += table(boot, sizes, ops, cells, False)
        md += table(boot, sizes, ops, cells, True)
        # The targets, per boot.
        def ratios(metric, pred):
            return [c["ratio"] for c in cells if c["metric"] == metric and
                    c["ratio"] is not None and pred(c["size"])]
        r64 = ratios("msg_rate", lambda s: s == 64)
        rbig = ratios("bw_mibs", lambda s: s >= 65536)
        summary = []
        if r64:
            summary.append("message rate at 64 B: krdma/perftest %s" %
                           ", ".join(f"{r:.2f}" for r in r64))
        if rbig:
            summary.append("bandwidth at >= 64 KiB: median krdma/perftest "
                           f"{statistics.median(rbig):.2f} (min {min(rbig):.2f})")
        boot["summary"] = summary
        for s in summary:
            text.append("   " + s)
        if summary:
            md.append("")
            md += ["- " + s for s in summary]
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
