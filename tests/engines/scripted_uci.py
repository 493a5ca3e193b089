#!/usr/bin/env python3
"""A scripted UCI engine for cfzero's teacher tests (written for this project, GPL-3.0-or-later).

It answers from a table instead of searching. The table (JSON, path in SCRIPTED_UCI_TABLE)
maps a FEN to {"moves": {uci: {"cp": X} | {"mate": N}, optional "wdl": [w, d, l]},
"best": uci, optional "fault": "hang" | "die" | "garbage" | "illegal", optional
"unreached": [uci, ...] (moves MultiPV leaves out)}.

`position fen F moves M...` is the position after the moves; a move that would repeat a
position for the third time in that line is scored a draw (cp 0, W/D/L 0/1000/0).

MultiPV k prints the k best moves (by the table's order of scores) at depth 1 with a wrong
score, then at depth 3 with the table's, then a lowerbound line with an absurd score that a
client must ignore. `go ... searchmoves M` answers for M alone.

A position with a "fault" misbehaves the first time it is searched (a marker file in
SCRIPTED_UCI_STATE records that), and every time when SCRIPTED_UCI_ALWAYS=1:
hang (no answer), die (exit), garbage (junk lines and a junk bestmove), illegal (a
bestmove that is not legal). SCRIPTED_UCI_DELAY_MS delays each answer.

A table with the key "*" answers every position it does not list by a rule (python-chess
finds the legal moves): a move's score is 100 cp per pawn of material the mover is ahead
after it (pawn 1, knight and bishop 3, rook 5, queen 9) plus (the sum of the character codes
of its UCI text) mod 13, and the best move is the highest-scored (the first in UCI order
among equals).
"""
import hashlib
import json
import os
import sys
import time


def key(score):
    if "mate" in score:
        n = score["mate"]
        return 100000 - n if n > 0 else -100000 - n
    return score["cp"]


def score_text(score):
    if "mate" in score:
        return "mate %d" % score["mate"]
    return "cp %d" % score["cp"]


def line(depth, k, move, score, extra=""):
    wdl = ""
    if "wdl" in score:
        wdl = " wdl %d %d %d" % tuple(score["wdl"])
    return "info depth %d seldepth %d multipv %d score %s%s%s nodes 42 pv %s" % (
        depth, depth, k, score_text(score), wdl, extra, move)


def by_rule(fen):
    import chess
    board = chess.Board(fen)
    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9,
              chess.KING: 0}
    moves = {}
    for m in sorted(board.legal_moves, key=lambda m: m.uci()):
        after = board.copy()
        after.push(m)
        ahead = sum(values[p.piece_type] * (1 if p.color == board.turn else -1)
                    for p in after.piece_map().values())
        moves[m.uci()] = {"cp": 100 * ahead + sum(map(ord, m.uci())) % 13}
    best = max(moves, key=lambda u: key(moves[u]))
    return {"moves": moves, "best": best}


def out(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    with open(os.environ["SCRIPTED_UCI_TABLE"]) as f:
        table = json.load(f)
    state_dir = os.environ.get("SCRIPTED_UCI_STATE", "")
    always = os.environ.get("SCRIPTED_UCI_ALWAYS") == "1"
    delay = int(os.environ.get("SCRIPTED_UCI_DELAY_MS", "0")) / 1000.0
    multipv = 1
    fen = None
    board = None
    for raw in sys.stdin:
        cmd = raw.strip()
        if cmd == "uci":
            out("id name scripted")
            out("option name MultiPV type spin default 1 min 1 max 500")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd.startswith("setoption name MultiPV value "):
            multipv = int(cmd.split()[-1])
        elif cmd.startswith("position fen "):
            fen, _, moves_text = cmd[len("position fen "):].partition(" moves ")
            fen = fen.strip()
            played = moves_text.split()
            board = None
            if played:
                import chess
                board = chess.Board(fen)
                for m in played:
                    board.push_uci(m)
                fen = board.fen()
        elif cmd.startswith("go"):
            entry = table.get(fen)
            if entry is None and "*" in table:
                entry = by_rule(fen)
            if entry is None:
                out("info string unknown position")
                out("bestmove 0000")
                continue
            fault = entry.get("fault")
            if fault:
                marker = os.path.join(state_dir, hashlib.sha1((fen + fault).encode()).hexdigest())
                first = not os.path.exists(marker)
                if first:
                    open(marker, "w").close()
                if first or always:
                    if fault == "hang":
                        time.sleep(3600)
                    elif fault == "die":
                        sys.exit(3)
                    elif fault == "garbage":
                        out("info depth x multipv score cp pv")
                        out("\x00\x01 nonsense")
                        out("bestmove zz99")
                        continue
                    elif fault == "illegal":
                        out("bestmove a1a1")
                        continue
            if delay:
                time.sleep(delay)
            tokens = cmd.split()
            moves = entry["moves"]
            if board is not None:
                # With the game's moves the engine knows its history: a move that repeats a
                # position for the third time is a draw, whatever the table says.
                moves = dict(moves)
                for m in list(moves):
                    board.push_uci(m)
                    if board.is_repetition(3):
                        moves[m] = {"cp": 0, "wdl": [0, 1000, 0]}
                    board.pop()
            if "searchmoves" in tokens:
                asked = tokens[tokens.index("searchmoves") + 1:]
                m = asked[0]
                out(line(1, 1, m, {"cp": -999}))
                out(line(3, 1, m, moves[m]))
                out("bestmove %s" % m)
                continue
            # Moves listed in "unreached" get no MultiPV line, as when a budget ends
            # inside Stockfish's first iteration; searchmoves still answers them.
            unreached = set(entry.get("unreached", []))
            ranked = [m for m in sorted(moves, key=lambda m: -key(moves[m]))[:multipv]
                      if m not in unreached]
            for k, m in enumerate(ranked, 1):
                out(line(1, k, m, {"cp": 7}))
            for k, m in enumerate(ranked, 1):
                out(line(3, k, m, moves[m]))
            out(line(3, 1, ranked[0], {"cp": 31000}, " lowerbound"))
            out("bestmove %s" % entry["best"])
        elif cmd == "quit":
            return


if __name__ == "__main__":
    main()
