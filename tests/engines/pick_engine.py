"""A minimal UCI engine for the tests of cfzero's UCI client and `cfzero match`.

It plays the first legal move in UCI order, or with the option `Pick` set to `last` the last
one, or with `Pick` set to `illegal` a move that is never legal. python-chess keeps the rules,
so an answer also shows which position the engine was given.
"""

import sys

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
        send("option name Pick type combo default first var first var last var illegal")
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
        else:
            send("bestmove " + (moves[-1] if pick == "last" else moves[0]))
    elif command == "quit":
        break
