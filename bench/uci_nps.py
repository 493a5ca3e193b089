#!/usr/bin/env python3
"""UCI search speed as a GUI sees it: nodes per second of `go nodes N` through python-chess.

Usage (from the repository root, after scripts/setup.sh):
  .venv/bin/python bench/uci_nps.py --net NET [--engine target/release/cfzero] [--nodes 800]
      [--positions 20] [--option Batch=32 ...] [--json]

Searches the start position, then the first N positions of the Strategic Test Suite
(tests/data/suites/STS1-STS15_LAN_v4.epd, middlegames), each once with a fresh game
(`ucinewgame`, so the evaluation cache starts empty), and reports nodes per second over the
wall time of each `go` (as the engine's own `nps` would, but measured from outside).
"""
import argparse
import json
import sys
import time

import chess
import chess.engine


def positions(count):
    yield "startpos", chess.Board()
    with open("tests/data/suites/STS1-STS15_LAN_v4.epd") as f:
        for i, line in enumerate(f):
            if i >= count:
                break
            board, ops = chess.Board.from_epd(line)
            yield ops.get("id", f"sts{i}"), board


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="target/release/cfzero")
    ap.add_argument("--net", required=True)
    ap.add_argument("--nodes", type=int, default=800)
    ap.add_argument("--positions", type=int, default=20)
    ap.add_argument("--option", action="append", default=[], help="NAME=VALUE")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    engine = chess.engine.SimpleEngine.popen_uci([args.engine, "uci", "--net", args.net])
    options = dict(o.split("=", 1) for o in args.option)
    if options:
        engine.configure(options)
    rows = []
    # One search to warm the net up (first forward passes are slower).
    engine.play(chess.Board(), chess.engine.Limit(nodes=64))
    for name, board in positions(args.positions):
        start = time.perf_counter()
        result = engine.play(board, chess.engine.Limit(nodes=args.nodes),
                             info=chess.engine.INFO_BASIC, game=object())
        seconds = time.perf_counter() - start
        nodes = result.info.get("nodes", 0)
        rows.append({"position": name, "nodes": nodes, "seconds": seconds,
                     "nps": nodes / seconds, "move": result.move.uci()})
        if not args.json:
            print(f"{name:>12} {nodes:6d} nodes {seconds:7.3f} s {nodes / seconds:8.1f} nodes/s "
                  f"{result.move.uci()}", file=sys.stderr)
    engine.quit()
    start_row = rows[0]
    mid = rows[1:]
    summary = {
        "nodes": args.nodes,
        "options": options,
        "startpos_nps": start_row["nps"],
        "middlegame_nps": sum(r["nodes"] for r in mid) / sum(r["seconds"] for r in mid) if mid else None,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"start position: {summary['startpos_nps']:.1f} nodes/s; "
              f"{len(mid)} middlegames: {summary['middlegame_nps']:.1f} nodes/s")


if __name__ == "__main__":
    main()
