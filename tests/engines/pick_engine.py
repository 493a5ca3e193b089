"""A minimal UCI engine for the tests of cfzero's UCI client and `cfzero match`.

It plays the first legal move in UCI order, or with the option `Pick` set to `last` the last
one, or with `Pick` set to `illegal` a move that is never legal. python-chess keeps the rules,
so an answer also shows which position the engine was given. Misbehaviours for the client's
hostile-engine tests: `chatty` prints `info` lines forever and never answers; `binary` prints
a line of bytes that are not UTF-8 before its (first-move) answer; `longline` prints 4 MB
without a newline before it.
"""

import sys
import time

import chess


def send(line):
    print(line, flush=True)


board = chess.Board()
pick = "first"
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    command = words[0]
    if command == "uci":
        send("id name pick-engine")
        send("id author cfzero tests")
        send("option name Pick type combo default first var first var last var illegal var chatty var binary var longline")
        send("uciok")
    elif command == "isready":
        send("readyok")
    elif command == "setoption":
        text = line.strip()
        name, _, value = text.partition(" name ")[2].partition(" value ")
        if name == "Pick":
            pick = value
    elif command == "ucinewgame":
        board = chess.Board()
    elif command == "position":
        rest = words[1:]
        if rest[0] == "startpos":
            board, rest = chess.Board(), rest[1:]
        else:
            fen_end = rest.index("moves") if "moves" in rest else len(rest)
            board, rest = chess.Board(" ".join(rest[1:fen_end])), rest[fen_end:]
        for uci in rest[1:]:
            board.push_uci(uci)
    elif command == "go":
        moves = sorted(m.uci() for m in board.legal_moves)
        if pick == "illegal":
            send("bestmove a1a1")
        elif pick == "chatty":
            while True:
                send("info depth 1 nodes 1 string still thinking")
                time.sleep(0.01)
        elif pick == "binary":
            sys.stdout.buffer.write(b"info string \xff\xfe\x80 not utf-8\n")
            sys.stdout.buffer.flush()
            send("bestmove " + moves[0])
        elif pick == "longline":
            sys.stdout.buffer.write(b"x" * (4 << 20) + b"\n")
            sys.stdout.buffer.flush()
            send("bestmove " + moves[0])
        else:
            send("bestmove " + (moves[-1] if pick == "last" else moves[0]))
    elif command == "quit":
        break
